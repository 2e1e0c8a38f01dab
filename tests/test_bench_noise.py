"""benchmarks/noise.py (`make bench-noise`): the hog stops by itself, the summary reads
the run folder as the report does, and (tf) a tiny run end to end."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from resultfactory import make_result, write_results

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import noise  # noqa: E402


def test_the_hog_is_bounded_and_stops_with_the_compare():
    t0 = time.monotonic()
    with noise.Hog("nice", [0], seed=1, max_s=0.5) as hog:
        deadline = time.monotonic() + 10
        while not hog.procs and time.monotonic() < deadline:  # a busy machine starts slowly
            time.sleep(0.05)
        pids = [p.pid for p in hog.procs]
        assert hog.duty > 0  # counted while it runs, not only once it ended
    assert pids and time.monotonic() - t0 < 20
    assert all(p.poll() is not None for p in hog.procs)
    with noise.Hog("nice", [0], seed=1, max_s=0.3) as hog:
        hog.thread.join(timeout=10)  # ends by itself, nobody stops it
    assert not hog.thread.is_alive() and hog.on_s > 0


def test_summary_reads_verdicts_twin_and_disturbed_cells(tmp_path):
    results = [
        make_result(v, t, "mnist_cnn", r, steady_epoch_s={1: 3.0, 2: 2.0}[t], noise=0.02, seed=s)
        for s, (v, t) in enumerate((("local", 1), ("local", 2), ("twin", 2)))
        for r in range(5)
    ]
    results[0]["cpu"] = {"others_share": 0.5}
    results[1]["runner"] = {"priority": {"requested": "raised", "shielded": True}}
    out = write_results(tmp_path / "run", results)
    summary = noise.RunSummary("bursts", 1, str(out), 0, 500.0, 0.4, 12)
    noise.summarise(out, summary)
    assert summary.comparisons["mnist_cnn"]["verdict"] == "different"
    assert summary.comparisons["mnist_cnn"]["ratio"] > 1
    assert summary.twin["mnist_cnn"] != "different"
    assert summary.twin_ok and summary.cells == 15 and summary.disturbed == 1
    assert (summary.raised, summary.shielded) == (1, 1)
    # No look recorded it: the final report alone does not count as decided.
    assert not summary.decided and summary.answer_s == 500.0
    assert "not decided at any look" in summary.line()

    from tfvariants.plan.spec import MatrixSpec
    from tfvariants.store.runfile import local_host, new_run

    spec = MatrixSpec(("local", "twin"), (1, 2), ("mnist_cnn",), 5)
    run = new_run(spec, [local_host()])
    undecided = {"verdict": "undecided", "ratio": 1.4}
    different = {"verdict": "different", "ratio": 1.5}
    pair = "mnist_cnn local@1 vs local@2"
    run["adaptive"] = {"looks_made": [
        {"after_repeats": 5, "at_s": 290.0, "verdicts": {pair: undecided}},
        {"after_repeats": 10, "at_s": 420.0, "verdicts": {pair: different}},
    ]}  # fmt: skip
    (out / "run.json").write_text(json.dumps(run))
    summary = noise.RunSummary("bursts", 1, str(out), 0, 500.0, 0.4, 12)
    noise.summarise(out, summary)
    assert summary.decided and (summary.decided_after, summary.answer_s) == (10, 420.0)
    line = summary.line()
    assert "DECIDED at the look after 10 repeats, 7.0 min" in line and "disturbed 1 of 15" in line
    assert "twin: mnist_cnn" in line and "raised priority 1 of 1 shielded" in line
    # How far the twin stayed from "equivalent": its interval and repeats (issue 25).
    detail = summary.twin_detail["mnist_cnn"]
    assert detail["repeats"] == 5 and detail["interval"][0] <= detail["ratio"]
    assert "after 5 repeats" in line and f"({detail['interval'][0]:.3f}-" in line
    assert summary.window_plan is None  # this run planned no window


def test_the_twin_in_words_says_how_far_from_equivalent():
    detail = {"ratio": 1.02, "interval": [0.953, 1.158], "repeats": 7, "more_repeats": 74}
    said = noise.twin_words("undecided", detail)
    assert said == "undecided 1.020x (0.953-1.158) after 7 repeats, about 74 more"
    assert noise.twin_words("equivalent", {**detail, "more_repeats": None}).endswith("7 repeats")
    assert noise.twin_words("undecided", None) == "undecided"


def test_bad_options_exit_2(tmp_path, capsys):
    assert noise.main(["--scenarios", "storm", "--out", str(tmp_path / "x")]) == 2
    assert "quiet, bursts, nice" in capsys.readouterr().err


import noise_user  # noqa: E402

TEST_USER = os.environ.get("TFV_TEST_USER", "tfvu")


def test_each_loaded_scenario_follows_its_own_quiet_run():
    assert noise.plan(["bursts", "nice"], 2, True) == [
        ("quiet", "quiet-bursts", 1),
        ("bursts", "bursts", 1),
        ("quiet", "quiet-nice", 1),
        ("nice", "nice", 1),
        ("quiet", "quiet-bursts", 2),
        ("bursts", "bursts", 2),
        ("quiet", "quiet-nice", 2),
        ("nice", "nice", 2),
    ]
    assert noise.plan(["nice"], 1, False) == [("nice", "nice", 1)]
    # The quiet scenario is its own quiet run: no second one before it.
    assert noise.plan(["quiet"], 2, True) == [("quiet", "quiet", 1), ("quiet", "quiet", 2)]
    with noise.Hog("quiet", [0], seed=1, max_s=5) as hog:
        hog.thread.join(timeout=5)
    assert not hog.procs and hog.bursts == 0 and hog.duty == 0.0  # no load at all


def test_a_command_as_a_user_goes_through_setpriv_with_its_home_and_only_named_caps():
    user = noise_user.User("ann", 1234, 2345, "/home/ann")
    command, env = noise_user.as_user(["py", "-m", "tfvariants"], user, {"PATH": "/bin"})
    assert command == [
        "setpriv",
        "--reuid=1234",
        "--regid=2345",
        "--init-groups",
        "--",
        "py",
        "-m",
        "tfvariants",
    ]
    assert env == {"PATH": "/bin", "HOME": "/home/ann", "USER": "ann", "LOGNAME": "ann"}
    capable = noise_user.User("ann", 1234, 2345, "/home/ann", ("sys_nice",))
    command, _ = noise_user.as_user(["py"], capable, {})
    assert "--inh-caps=+sys_nice" in command and "--ambient-caps=+sys_nice" in command
    assert noise_user.as_user(["py"], None, {"A": "1"}) == (["py"], {"A": "1"})


def test_bad_user_options_exit_2_and_write_nothing(tmp_path, capsys):
    out = tmp_path / "x"
    assert noise.main(["--user", "no-such-user-here", "--out", str(out)]) == 2
    assert "no such user" in capsys.readouterr().err and not out.exists()
    assert noise.main(["--user", "root", "--out", str(out)]) == 2
    assert "that is root" in capsys.readouterr().err and not out.exists()


def test_the_dry_run_prints_each_compare_and_runs_nothing(tmp_path, capsys):
    out = tmp_path / "bench"
    assert noise.main(["--dry-run", "--scenarios", "nice", "--out", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(" (")[0] for line in lines] == ["quiet-nice run 1", "nice run 1"]
    assert all("-m tfvariants compare --quick" in line for line in lines)
    assert f"--out {out}/quiet-nice-1 " in lines[0] and not out.exists()


def have_test_user() -> bool:
    import pwd
    import shutil

    try:
        pwd.getpwnam(TEST_USER)
    except KeyError:
        return False
    return os.geteuid() == 0 and shutil.which("setpriv") is not None


@pytest.mark.skipif(not have_test_user(), reason=f"needs root, setpriv and a user {TEST_USER}")
def test_the_compare_really_runs_as_the_user(tmp_path, capsys):
    user = noise_user.find_user(TEST_USER, ["sys_nice"])
    assert isinstance(user, noise_user.User)
    status = "open('/proc/self/status').read()"
    probe = f"import os; print(os.geteuid(), {status}.count('CapAmb:\\t0000000000800000'))"
    command, env = noise_user.as_user(["/usr/bin/python3", "-c", probe], user, os.environ)
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd="/", timeout=60)
    assert done.stdout.split() == [str(user.uid), "1"], done.stderr  # CAP_SYS_NICE ambient
    # The preflight: this user can import tfvariants from this tree with a Python it may run,
    # and says why not with one it may not (or a tree it cannot import from).
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    assert noise_user.preflight("/usr/bin/python3", user, ROOT, env) is None
    why = noise_user.preflight("/usr/bin/python3", user, Path("/"), {"PYTHONPATH": "/none"})
    assert why is not None and why.startswith(f"--user {TEST_USER} cannot run") and "\n" not in why
    # A Python reached through a folder the user cannot enter (a root-made venv over
    # /root/.pyenv): setpriv starts it, but it cannot start its workers: refused up front.
    # (Outside pytest's own tmp folder, which the user cannot enter at all.)
    open_dir = Path(tempfile.mkdtemp(prefix="tfv-preflight-"))
    try:
        open_dir.chmod(0o755)
        locked = open_dir / "locked"
        locked.mkdir(mode=0o700)
        (locked / "python3").symlink_to("/usr/bin/python3")
        (open_dir / "python3").symlink_to(locked / "python3")
        why = noise_user.preflight(str(open_dir / "python3"), user, ROOT, env)
        assert why is not None and "Permission denied" in why, why
    finally:
        shutil.rmtree(open_dir)
    out = tmp_path / "bench"
    assert noise.main(["--dry-run", "--user", TEST_USER, "--out", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4 and all(f"setpriv --reuid={user.uid}" in line for line in lines)


def test_each_loaded_interval_is_set_against_the_quiet_ratio():
    quiet = {
        "mnist_cnn": {"verdict": "different", "ratio": 1.74, "interval": [1.56, 1.82]},
        "cifar10_cnn": {"verdict": "different", "ratio": 1.5, "interval": [1.4, 1.6]},
    }
    loaded = {
        "mnist_cnn": {
            "verdict": "different",
            "ratio": 1.33,
            "interval": [1.29, 1.42],
            "under_load": None,
        },  # the sustained run, unlabelled
        "cifar10_cnn": {
            "verdict": "different",
            "ratio": 2.06,
            "interval": [1.82, 2.29],
            "under_load": [5, 5],
        },  # labelled "under load": honest
    }
    noise_user.against_quiet(loaded, quiet)
    m, c = loaded["mnist_cnn"], loaded["cifar10_cnn"]
    assert (m["quiet_ratio"], m["covers_quiet"], m["honest"]) == (1.74, False, False)
    assert (c["covers_quiet"], c["honest"]) == (False, True)
    summary = noise.RunSummary("nice", 1, "x", 0, 600.0, 1.0, 1, comparisons=loaded)
    summary.waited_s = 30.0
    assert not summary.honest and summary.waits_share == 0.05
    assert "quiet 1.74x NOT covered, presented as plain decided" in summary.line()
    assert "under load 5/5; quiet 1.50x NOT covered" in summary.line()
    lines = noise.targets([noise.RunSummary("quiet-nice", 1, "q", 0, 60.0, 0.0, 0), summary])
    assert "left unlabelled in 0 of 1" in lines[1] and "compare time in 1 of 1" in lines[2]
    assert "twin 'equivalent' on every workload within 10 min in 0 of 1 quiet" in lines[3]


def test_the_twin_target_counts_quiet_runs_that_say_the_same_within_10_minutes() -> None:
    def quiet(twin: dict[str, str], minutes: float) -> noise.RunSummary:
        return noise.RunSummary("quiet", 1, "q", 0, minutes * 60, 0.0, 0, twin=twin)

    both = {"mnist_cnn": "equivalent", "cifar10_cnn": "equivalent"}
    runs = [
        quiet(both, 9.0),
        quiet({**both, "cifar10_cnn": "undecided"}, 9.0),  # not on every workload
        quiet(both, 11.0),  # too late
        noise.RunSummary("bursts", 1, "b", 0, 480.0, 0.4, 9, twin={"mnist_cnn": "different"}),
    ]
    line = noise.targets(runs)[3]
    assert "within 10 min in 1 of 3 quiet run(s); 'different' in 1 of 4 run(s)" in line


@pytest.mark.tf
def test_a_tiny_noisy_run_end_to_end(tmp_path):
    out = tmp_path / "bench"
    tiny = ["--compare-arg=--repeats=1", "--compare-arg=--max-repeats=1",
            "--compare-arg=--samples=256", "--compare-arg=--min-steady-s=0.2",
            "--compare-arg=--min-steady-steps=3", "--compare-arg=--quiet-wait=2s"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "noise.py"), "--scenarios", "nice",
         "--workloads", "mnist_cnn", "--max-s", "600", "--out", str(out), *tiny],
        capture_output=True, text=True, env=env, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "quiet-nice run 1:" in proc.stdout and "\nnice run 1:" in proc.stdout
    assert "twin:" in proc.stdout and "left unlabelled in" in proc.stdout
    assert "--later twin" in proc.stdout  # outside the quiet scenario the twin waits
    quiet, loaded = json.loads((out / "bench-noise.json").read_text())
    assert (quiet["scenario"], loaded["scenario"]) == ("quiet-nice", "nice")
    assert quiet["hog_bursts"] == 0 and loaded["hog_bursts"] == 1  # the quiet run: no hog
    for summary in (quiet, loaded):
        # local@1 and local@2: the twin runs --later, after a first look that this run's
        # single repeat never gets past
        assert summary["cells"] >= 2 and summary["exit_code"] == 0


def test_the_quiet_scenario_gets_its_targets_ten_minutes_and_the_loaded_ones_eight(
    tmp_path, capsys
):
    out = str(tmp_path / "x")
    assert noise.main(["--scenarios", "quiet,nice", "--dry-run", "--out", out]) == 0
    lines = capsys.readouterr().out.splitlines()
    budgets = {line.split(" run ")[0]: line.split("--budget ")[1].split()[0] for line in lines}
    # the twin's target is 10 min; a loaded scenario's, and its quiet yardstick's, 8 min
    assert budgets == {"quiet": "10m", "quiet-nice": "8m", "nice": "8m"}
    assert noise.main(["--scenarios", "quiet", "--dry-run", "--budget", "5m", "--out", out]) == 0
    assert "--budget 5m" in capsys.readouterr().out


def test_one_quiet_run_per_run_is_the_yardstick_of_all_its_loaded_scenarios() -> None:
    steps = noise.plan(["bursts", "nice"], 2, True, shared=True)
    assert steps == [
        ("quiet", "quiet-loaded", 1), ("bursts", "bursts", 1), ("nice", "nice", 1),
        ("quiet", "quiet-loaded", 2), ("bursts", "bursts", 2), ("nice", "nice", 2),
    ]  # fmt: skip
    # The shared quiet run keeps the loaded runs' budget (not the quiet scenario's 10 m).
    assert noise.budget_of(noise.parse(["--out", "x"]), "quiet-loaded") == noise.DEFAULT_BUDGET
    runs = [noise.RunSummary(name, run, "x", 0, 1.0, 0.0, 1) for _, name, run in steps]
    # The nice run of run 1 is set against run 1's quiet run, not against the bursts run.
    assert noise.yardstick(runs[:3]) is runs[0]
    # A run without a quiet run of its own gets none (not the previous run's).
    assert noise.yardstick([runs[0], noise.RunSummary("bursts", 2, "x", 0, 1.0, 0.0, 1)]) is None


def test_a_comparison_without_an_interval_is_not_set_against_the_quiet_ratio() -> None:
    # Five rounds picked paired under load: no paired interval exists yet, and its lo and
    # hi are the estimate itself ("1.34x (1.34-1.34) ... quiet 1.77x NOT covered" before).
    c = {"verdict": "undecided", "ratio": 1.34, "interval": None, "under_load": (5, 5)}
    loaded = {"mnist_cnn": c}
    noise.against_quiet(loaded, {"mnist_cnn": {"ratio": 1.77}})
    assert "quiet_ratio" not in loaded["mnist_cnn"]
    said = noise.comparison_words(loaded["mnist_cnn"])
    assert said == "undecided 1.34x (no interval) under load 5/5"
    ratio = SimpleNamespace(value=1.34, lo=1.34, hi=1.34, has_interval=False)
    assert noise._interval(ratio) is None
    assert noise._interval(SimpleNamespace(lo=1.2, hi=1.5, has_interval=True)) == [1.2, 1.5]


def test_the_memory_hog_streams_beyond_the_cache_beside_the_cells_or_at_nice_19(tmp_path):
    from noise_hog import MEMBW_CODE, llc_bytes, membw_plan, parse_cpus

    llc = 36 << 20
    # A CPU the cells leave free: the hog there, at normal priority.
    assert membw_plan([0, 1, 2, 3], [0, 1], llc) == ([2, 3], 0, 4 * llc)
    # A 2-core host at 1 and 2 threads: on the cells' own CPUs, at nice 19.
    assert membw_plan([0, 1], [0, 1], llc) == ([0, 1], 19, 4 * llc)
    assert membw_plan([0, 1], [0], 1 << 20)[2] == 64 << 20  # never a buffer a cache holds
    hog = noise.Hog("membw", [1], seed=0, max_s=5, nice=19, buffer_bytes=4 * llc)
    command = hog.command(2.5)
    assert command[1:] == ["-c", MEMBW_CODE, "2.50", str(4 * llc)]
    assert "np.copyto" in MEMBW_CODE
    (tmp_path / "index0").mkdir()
    (tmp_path / "index0" / "size").write_text("48K\n")
    (tmp_path / "index3").mkdir()
    (tmp_path / "index3" / "size").write_text("36608K\n")
    assert llc_bytes(str(tmp_path)) == 36608 << 10
    assert parse_cpus("0-1,3") == [0, 1, 3] and parse_cpus("x") == []


def test_the_memory_scenario_runs_its_hog_beside_the_cells(tmp_path, capsys):
    assert "membw" in noise.SCENARIOS
    assert noise.plan(["membw"], 1, True) == [("quiet", "quiet-membw", 1), ("membw", "membw", 1)]
    hog = noise._hog("membw", [1], seed=0, max_s=1)
    assert hog.kind == "membw" and hog.buffer_bytes >= 64 << 20
    assert set(hog.cpus).isdisjoint(noise.hog_cpus([1])) or hog.nice == 19


def test_the_steal_hog_takes_a_bounded_share_at_real_time_priority():
    """steal: started for real on one CPU, each process runs at SCHED_FIFO (which no nice
    value holds off), takes a share within its duty range, and ends by itself."""
    from noise_hog import STEAL_CODE, STEAL_DUTY, may_take_realtime

    if not may_take_realtime():  # the hog's own check
        pytest.skip("real-time priority needs root with CAP_SYS_NICE (CI's test step)")
    assert "steal" in noise.SCENARIOS
    hog = noise._hog("steal", [1], seed=3, max_s=3.0)
    assert hog.kind == "steal" and hog.command(3.0)[2] == STEAL_CODE
    with hog:
        time.sleep(1.0)
        procs = list(hog.procs)
        assert procs and all(os.sched_getscheduler(p.pid) == os.SCHED_FIFO for p in procs)
        t0, cpu0 = time.monotonic(), [_cpu_s(p.pid) for p in procs]
        time.sleep(1.5)
        share = [
            (_cpu_s(p.pid) - c) / (time.monotonic() - t0) for p, c in zip(procs, cpu0, strict=True)
        ]
        hog.thread.join(timeout=10)
    assert all(p.poll() is not None for p in procs)  # ended by itself, within its time
    # Within the drawn duty, with room for the copy that overruns a burst's end
    assert all(STEAL_DUTY[0] / 2 <= s <= STEAL_DUTY[1] + 0.1 for s in share), share


def _cpu_s(pid: int) -> float:
    """A process's user + system CPU seconds (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_steal_is_refused_in_one_line_where_real_time_priority_is_not_allowed(
    tmp_path, monkeypatch, capsys
):
    """Without real-time priority the steal hog's processes would exit at once and the
    runs be labelled steal beside no neighbour: refused before anything runs."""
    monkeypatch.setattr(noise, "may_take_realtime", lambda: False)
    out = tmp_path / "out"
    assert noise.main(["--scenarios", "steal", "--no-quiet", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["noise.py: --scenarios steal: real-time priority needs root (CAP_SYS_NICE)"]
    assert not out.exists()
