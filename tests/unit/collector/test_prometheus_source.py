"""The Prometheus source's answers → broker usage, its errors, its settings file, and the samples it fills.

HTTP goes through a real ``requests.Session`` whose transport is an in-memory adapter answering like
Prometheus' query API; the real server is exercised in ``tests/integration/test_prometheus_source.py``.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
import requests
from requests.adapters import BaseAdapter

from kafka_balancer.cli import main
from kafka_balancer.errors import InputError, MetricsSourceError
from kafka_balancer.kafka.collector import Observation, PartitionInfo, samples_between
from kafka_balancer.kafka.snapshot_builder import BrokerInfo
from kafka_balancer.prometheus.settings import PrometheusSettings
from kafka_balancer.prometheus.source import PrometheusSource
from kafka_balancer.prometheus.spec import PrometheusFile, read_prometheus_file
from kafka_balancer.samples.broker_usage import BrokerUsage

Answer = Callable[[str], tuple[int, Any]]


class _QueryApi(BaseAdapter):
    """Answers GET /api/v1/query with ``answer(query)`` → (HTTP status, JSON body); records queries."""

    def __init__(self, answer: Answer) -> None:
        super().__init__()
        self.answer = answer
        self.asked: list[tuple[str, float]] = []
        self.authorizations: list[str | None] = []

    def send(
        self,
        request: requests.PreparedRequest,
        stream: bool = False,
        timeout: float | tuple[float, float] | tuple[float, None] | None = None,
        verify: bool | str = True,
        cert: bytes | str | tuple[bytes | str, bytes | str] | None = None,
        proxies: Mapping[str, str] | None = None,
    ) -> requests.Response:
        params = parse_qs(urlparse(request.url or "").query)
        query, at = params["query"][0], float(params["time"][0])
        self.asked.append((query, at))
        self.authorizations.append(request.headers.get("Authorization"))
        status, body = self.answer(query)
        response = requests.Response()
        response.status_code = status
        response.raw = io.BytesIO(json.dumps(body).encode())
        response.request = request
        return response

    def close(self) -> None:
        pass


def _vector(series: list[tuple[Mapping[str, str], str]]) -> dict[str, Any]:
    return {
        "status": "success",
        "data": {"resultType": "vector", "result": [{"metric": m, "value": [1.0, v]} for m, v in series]},
    }


def _source(answer: Answer, **settings: Any) -> tuple[PrometheusSource, _QueryApi]:
    api = _QueryApi(answer)
    session = requests.Session()
    session.mount("http://", api)
    return PrometheusSource(PrometheusSettings(url="http://prom:9090", **settings), session), api


def by_kind(cpu: list[Any], net_in: list[Any], net_out: list[Any]) -> Answer:
    def answer(query: str) -> tuple[int, Any]:
        if "process_cpu" in query:
            return 200, _vector(cpu)
        return 200, _vector(net_in if "bytesin" in query else net_out)

    return answer


def test_each_broker_gets_its_series_summed_and_unnamed_or_nan_series_are_ignored() -> None:
    source, api = _source(
        by_kind(
            cpu=[
                ({"pod": "my-cluster-kafka-3"}, "0.5"),
                ({"pod": "my-cluster-kafka-3"}, "0.25"),  # two JVM series of one pod
                ({"pod": "my-cluster-pool-a-12"}, "1.5"),
                ({"pod": "zookeeper"}, "9"),  # no broker id in the label
                ({"instance": "x:1"}, "9"),  # no broker label at all
                ({"pod": "my-cluster-kafka-4"}, "NaN"),  # 0/0 from a fresh counter
            ],
            net_in=[({"pod": "my-cluster-kafka-3"}, "1000")],
            net_out=[({"pod": "my-cluster-kafka-12"}, "2e6")],
        )
    )
    found = source.usage(end_ms=1_700_000_010_000, interval_ms=10_000)
    assert found == {
        3: BrokerUsage(cpu=0.75, network_in=1000.0, network_out=None),
        12: BrokerUsage(cpu=1.5, network_in=None, network_out=2e6),
    }
    # Asked at the end of the interval, over at least the minimum range.
    assert {at for _, at in api.asked} == {1_700_000_010.0}
    assert all("[60s]" in q and "by (pod)" in q for q, _ in api.asked)


def test_the_range_covers_the_interval_and_never_goes_below_the_minimum() -> None:
    settings = PrometheusSettings(url="http://p", min_range_s=15)
    assert settings.render("rate(x[{range}]) by {label}", 10_000) == "rate(x[15s]) by pod"
    assert settings.render("{range}", 90_500) == "91s"


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        (400, {"status": "error", "errorType": "bad_data", "error": "parse error at char 5"}, "parse error"),
        (401, {"status": "error"}, "access refused (HTTP 401)"),
        (200, {"status": "success", "data": {"resultType": "matrix", "result": []}}, "instant vector"),
        (502, "<html>bad gateway</html>", "HTTP 502"),
    ],
)
def test_a_failing_answer_is_one_line_naming_prometheus(status: int, body: Any, message: str) -> None:
    source, _ = _source(lambda q: (status, body))
    with pytest.raises(MetricsSourceError, match=re.escape(message)) as caught:
        source.usage(1_000, 1_000)
    assert "http://prom:9090" in str(caught.value) and "\n" not in str(caught.value)


def test_unreachable_prometheus_is_named() -> None:
    source = PrometheusSource(PrometheusSettings(url="http://127.0.0.1:1", timeout_s=2))
    with pytest.raises(MetricsSourceError, match="unreachable"):
        source.usage(1_000, 1_000)


def test_check_refuses_answers_that_name_no_broker() -> None:
    source, _ = _source(by_kind([({"kubernetes_pod_name": "k-1"}, "1")], [], []))
    assert source.usage(1_000, 1_000) == {}
    with pytest.raises(MetricsSourceError, match="label 'pod'"):
        source.check(1_000, 1_000, [1, 2])


def test_check_refuses_ids_that_are_no_broker_and_keeps_those_that_are() -> None:
    # A label that ends in the exporter's port ("instance") yields numbers, just not broker ids.
    source, _ = _source(by_kind([({"pod": "10.0.0.7:9404"}, "1")], [], []))
    with pytest.raises(MetricsSourceError, match="ids 9404; brokers 1, 2"):
        source.check(1_000, 1_000, [1, 2])
    source, _ = _source(by_kind([({"pod": "k-1"}, "1"), ({"pod": "k-9"}, "1")], [], []))
    assert set(source.check(1_000, 1_000, [1, 2])) == {1}


def test_the_bearer_token_is_sent_and_not_shown() -> None:
    api = _QueryApi(lambda q: (200, _vector([({"pod": "k-1"}, "1")])))
    session = requests.Session()
    session.mount("http://", api)
    settings = PrometheusSettings(url="http://p", bearer_token="s3cret")
    PrometheusSource(settings, session).usage(1_000, 1_000)
    assert api.authorizations == ["Bearer s3cret"] * 3
    assert "s3cret" not in repr(settings)


def _observation(ts: int) -> Observation:
    tp = ("t", 0)
    return Observation(
        ts_ms=ts,
        brokers=(BrokerInfo(1, "a"), BrokerInfo(2, "b")),
        partitions={tp: PartitionInfo((1, 2), 1, frozenset({1, 2}))},
        sizes={tp: 100},
        start_offsets={tp: 0},
        end_offsets={tp: 1},
        committed={},
    )


def test_usage_fills_the_broker_samples_and_unknown_brokers_stay_null() -> None:
    _, brokers = samples_between(
        _observation(1_000),
        _observation(11_000),
        {1: BrokerUsage(0.5, 100.0, 200.0), 7: BrokerUsage(1, 1, 1)},
    )
    assert [(b["broker"], b["cpu"], b["network_in"], b["network_out"]) for b in brokers.to_pylist()] == [
        (1, 0.5, 100.0, 200.0),
        (2, None, None, None),
    ]


def test_spec_file_overrides_defaults_and_the_flag_url_wins(tmp_path: Path) -> None:
    path = tmp_path / "prom.json"
    token = tmp_path / "token"
    token.write_text("abc\n")
    path.write_text(
        json.dumps(
            {
                "url": "https://prom.example:9090",
                "brokerLabel": "kubernetes_pod_name",
                "brokerIdPattern": r"kafka-(\d+)",
                "minRangeSeconds": 30,
                "queries": {"cpu": 'sum by ({label}) (rate(my_cpu{{job="k"}}[{range}]))'},
                "bearerTokenFile": str(token),
            }
        )
    )
    settings = read_prometheus_file(path).resolve()
    assert settings.url == "https://prom.example:9090"
    assert (
        settings.render(settings.cpu_query, 10_000)
        == 'sum by (kubernetes_pod_name) (rate(my_cpu{job="k"}[30s]))'
    )
    assert settings.broker_id_pattern.search("c-kafka-7-x").group(1) == "7"  # type: ignore[union-attr]
    assert settings.bearer_token == "abc"
    assert read_prometheus_file(path).resolve("http://other:1").url == "http://other:1"


def test_no_url_anywhere_is_an_input_error() -> None:
    with pytest.raises(InputError, match="no url"):
        PrometheusFile().resolve()


@pytest.mark.parametrize(
    ("flags", "file", "message"),
    [
        (["--prometheus-url", "prom:9090"], None, "must start with http"),
        (["--prometheus-config", "FILE"], {"brokerIdPattern": "kafka-\\d+"}, "brokerIdPattern"),
        (["--prometheus-config", "FILE"], {"brokerIdPattern": "(unclosed"}, "brokerIdPattern"),
        (["--prometheus-config", "FILE"], {"queries": {"cpu": 'rate(x{job="k"}[{range}])'}}, "queries.cpu"),
        (["--prometheus-config", "FILE"], {"url": "http://p", "colour": "red"}, "colour"),
        (["--prometheus-config", "FILE"], {"minRangeSeconds": 0}, "minRangeSeconds"),
        (["--prometheus-config", "FILE"], {"brokerLabel": "pod"}, "no url"),
    ],
)
def test_snapshot_refuses_bad_prometheus_settings_with_one_line_exit_2(
    flags: list[str],
    file: dict[str, Any] | None,
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = tmp_path / "prom.json"
    if file is not None:
        config.write_text(json.dumps(file))
    flags = [str(config) if f == "FILE" else f for f in flags]
    code = main(
        [
            "snapshot",
            "--bootstrap-server",
            "127.0.0.1:1",
            "--output",
            str(tmp_path / "s.json"),
            "--disk-capacity",
            "1",
            "--network-capacity",
            "1",
            "--cpu-capacity",
            "1",
            *flags,
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and message in err, err
