"""Test-wide rules: unmarked tests are `cpu`; HUMMING_TEST_REQUIRE turns device skips into failures."""

from __future__ import annotations

import pytest

DEVICE_MARKERS = ("compile", "cuda", "ppu", "vllm", "perf")


def _required() -> set[str]:
    from humming_core.env import ENV

    return set(ENV.HUMMING_TEST_REQUIRE)


def pytest_collection_modifyitems(config, items):
    for item in items:
        hardware = [m for m in DEVICE_MARKERS if item.get_closest_marker(m)]
        if hardware and item.get_closest_marker("cpu"):
            raise pytest.UsageError(
                f"{item.nodeid} is marked both cpu and {', '.join(hardware)}: a test needing a device "
                "is not a cpu test (unmarked tests are cpu already; drop the module-level cpu mark)"
            )
        if not hardware and not item.get_closest_marker("cpu"):
            item.add_marker(pytest.mark.cpu)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not report.skipped:
        return
    required = _required() & {m for m in (*DEVICE_MARKERS, "cpu") if item.get_closest_marker(m)}
    if required:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped, but HUMMING_TEST_REQUIRE={','.join(sorted(required))} requires it to run: {reason}"
