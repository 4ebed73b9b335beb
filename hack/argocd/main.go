// health-lua runs an Argo CD resource health script on Kubernetes objects the way Argo CD's
// application controller does for a custom health check in argocd-cm: gopher-lua (Argo CD's Lua
// VM) without the standard libraries but package, base and table, a one-second limit, the object
// as the global `obj`, and a result that must be a table whose status is one of Argo CD's health
// codes. It prints one JSON line per object: {"status": ..., "message": ...}.
//
// Usage: health-lua SCRIPT OBJECT.json...
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// Argo CD's health codes; any other status is reported as Unknown, as Argo CD does.
var codes = map[string]bool{
	"Healthy": true, "Progressing": true, "Degraded": true, "Suspended": true, "Missing": true, "Unknown": true,
}

type health struct {
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
}

func toLua(l *lua.LState, value any) lua.LValue {
	switch v := value.(type) {
	case bool:
		return lua.LBool(v)
	case float64:
		return lua.LNumber(v)
	case string:
		return lua.LString(v)
	case []any:
		array := l.CreateTable(len(v), 0)
		for _, item := range v {
			array.Append(toLua(l, item))
		}
		return array
	case map[string]any:
		table := l.CreateTable(0, len(v))
		for key, item := range v {
			table.RawSetString(key, toLua(l, item))
		}
		return table
	}
	return lua.LNil
}

func evaluate(script string, object map[string]any) (health, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for name, open := range map[string]lua.LGFunction{
		lua.LoadLibName: lua.OpenPackage, lua.BaseLibName: lua.OpenBase, lua.TabLibName: lua.OpenTable,
	} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(open), Protect: true}, lua.LString(name)); err != nil {
			return health{}, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", toLua(l, object))
	if err := l.DoString(script); err != nil {
		return health{}, err
	}
	result, ok := l.Get(-1).(*lua.LTable)
	if !ok {
		return health{}, fmt.Errorf("expected a table from the script, not %s", l.Get(-1).Type())
	}
	found := health{Status: lua.LVAsString(result.RawGetString("status"))}
	if message := result.RawGetString("message"); message != lua.LNil {
		found.Message = lua.LVAsString(message)
	}
	if !codes[found.Status] {
		return health{Status: "Unknown", Message: "Lua returned an invalid health status"}, nil
	}
	return found, nil
}

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: health-lua SCRIPT OBJECT.json...")
		os.Exit(2)
	}
	script, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for _, path := range os.Args[2:] {
		text, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		var object map[string]any
		if err := json.Unmarshal(text, &object); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
			os.Exit(2)
		}
		found, err := evaluate(string(script), object)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
			os.Exit(1)
		}
		line, _ := json.Marshal(found)
		fmt.Println(string(line))
	}
}
