"""The cpu_feature_guard message is parsed in two places: workloads/envprobe.py (inside
every variant) and builds/compiled/check_isa.py (inside the image build, standard
library only, where the workloads package is not installed). This keeps them agreeing
on every wording either one knows."""

from __future__ import annotations

import pytest
import test_builds
import test_envprobe

from workloads.envprobe import parse_missing_instructions

LOGS = {
    name: getattr(module, name)
    for module, names in (
        (test_envprobe, ("TF_2_21", "TF_2_3", "TF_1_15", "TF_1_0")),
        (test_builds, ("GUARD_2_21", "GUARD_AMX", "GUARD_2_5", "GUARD_1_12", "GUARD_1_2")),
    )
    for name in names
}
LOGS["no-message"] = "I0000 some other log line\n"
LOGS["amid-other-lines"] = "W0000 x\n" + LOGS["TF_2_21"] + "I0000 Created device /CPU:0\n"


@pytest.mark.parametrize("name", sorted(LOGS))
def test_envprobe_and_check_isa_read_the_guard_alike(name):
    log = LOGS[name]
    ours = parse_missing_instructions(log)
    theirs = test_builds._check_isa().missing_instructions(log)
    assert (ours or []) == theirs
    assert (ours is None) == (name == "no-message")  # envprobe tells "unknown" from "none"
