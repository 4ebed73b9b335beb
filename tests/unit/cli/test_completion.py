"""``kafka-balancer completion bash|zsh`` prints a script that completes the parser's commands and
flags; bash, when present, completes ``kafka-balancer ex<TAB>`` to ``execute`` with it."""

from __future__ import annotations

import argparse
import shutil
import subprocess

import pytest

from kafka_balancer.cli import build_parser, main


def _script(shell: str, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["completion", shell]) == 0
    return capsys.readouterr().out


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_the_script_names_every_command_and_a_flag_of_each(
    shell: str, capsys: pytest.CaptureFixture[str]
) -> None:
    script = _script(shell, capsys)
    for name, parser in _subcommands().items():
        assert name in script
        flags = [f for a in parser._actions for f in a.option_strings if f.startswith("--") and f != "--help"]
        assert not flags or any(flag in script for flag in flags), name
    assert "--throttle" in script and "--dead-broker-timeout" in script


def _bash_completes(script: str, *words: str) -> list[str]:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash on this machine")
    line = " ".join(words)
    program = (
        f"{script}\n"
        f"COMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; COMP_LINE='{line}'; COMP_POINT=${{#COMP_LINE}}\n"
        "func=$(complete -p kafka-balancer | sed -E 's/.* -F ([^ ]+) .*/\\1/')\n"
        f'"$func" kafka-balancer {words[-1]} {words[-2]}\n'
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    command = [bash, "--norc", "--noprofile", "-c", program]
    done = subprocess.run(command, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_bash_completes_a_command_and_its_flags(capsys: pytest.CaptureFixture[str]) -> None:
    script = _script("bash", capsys)
    assert _bash_completes(script, "kafka-balancer", "ex") == ["execute"]
    assert "--throttle" in _bash_completes(script, "kafka-balancer", "execute", "--thr")
    assert _bash_completes(script, "kafka-balancer", "execute", "--order", "sm") == ["smallest-first"]


def test_an_unknown_shell_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["completion", "fish"])
    assert exited.value.code == 2
    assert "argument shell" in capsys.readouterr().err
