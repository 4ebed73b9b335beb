// CoreDNS built with only the plugins the node bed's Corefile uses (localbed/node.py's _corefile).
// The release's own main imports every plugin, and their cloud SDKs made the cold build minutes
// long. Directives keep CoreDNS's own order (core/dnsserver/zdirectives.go); a Corefile naming a
// plugin not imported here is refused at start, so a new one is added here as well.
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
)

func main() {
	coremain.Run()
}
