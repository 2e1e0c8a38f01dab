import pytest

from tfvariants.analyze.cost.catalog import Billing, load_catalog
from tfvariants.analyze.cost.pricing import Pricing, parse_pricing_option
from tfvariants.errors import UserError


@pytest.fixture(scope="module")
def gce():
    return load_catalog("gce-2017")


def test_billing_rules_round_up_and_apply_the_minimum():
    per_s = Billing("per_second", 60)
    assert per_s.billed_seconds(30) == 60
    assert per_s.billed_seconds(60) == 60
    assert per_s.billed_seconds(60.2) == 61
    assert per_s.billed_seconds(3600) == 3600
    per_h = Billing("per_hour", 0)
    assert per_h.billed_seconds(1) == 3600
    assert per_h.billed_seconds(3661) == 7200


def test_catalog_holds_the_studys_dated_prices(gce):
    assert gce.billing.rule == "per_second" and gce.billing.minimum_seconds == 60
    assert "Woolf" in gce.source
    p = {i.name: i for i in gce.instances}
    assert [x.preemptible for x in p["n1-highcpu-16"].prices] == [0.127, 0.12]
    assert gce.price(p["n1-highcpu-64"]).per_hour == 0.509
    assert gce.price(p["n1-highcpu-32"], as_of="2017-11").per_hour == 0.24
    assert gce.price(p["n1-standard-1+P100"], as_of="2017-11").per_hour == 1.5075
    assert gce.price(p["n1-standard-1+P100"], as_of="2017-07") is None  # not offered yet


def test_cost_of_30_seconds_on_highcpu_8_is_the_one_minute_minimum(gce):
    cost = Pricing(gce).cost("pip", 8, 30.0)
    assert cost.instance == "n1-highcpu-8"
    assert cost.billed_seconds == 60
    assert cost.cost == pytest.approx(60 * 0.0636 / 3600)
    assert cost.tier == "preemptible"


def test_cost_by_hand_for_each_cpu_size(gce):
    pricing = Pricing(gce)
    for threads, per_hour in ((8, 0.0636), (16, 0.127), (32, 0.254), (64, 0.509)):
        c = pricing.cost("compiled", threads, 600.4)
        assert c.billed_seconds == 601
        assert c.cost == pytest.approx(601 * per_hour / 3600)
    nov = Pricing(gce, as_of="2017-11")
    assert nov.cost("pip", 16, 3600).cost == pytest.approx(0.12)
    assert nov.cost("pip", 8, 3600).cost == pytest.approx(0.0636)  # no newer point: July's


def test_gpu_prices_fall_back_to_on_demand_before_preemptible_gpus_existed(gce):
    july = Pricing(gce).cost("gpu", 8, 1800, device="gpu")
    assert july.instance == "n1-standard-1+K80"
    assert july.tier == "on_demand" and july.per_hour == 0.745
    assert "no preemptible price" in july.note
    assert july.cost == pytest.approx(0.745 / 2)
    nov = Pricing(gce, as_of="2017-11").cost("gpu", 8, 1800, device="gpu")
    assert nov.per_hour == 0.4975
    dec = Pricing(gce, as_of="2017-12").cost("gpu", 8, 1800, device="gpu")
    assert dec.tier == "preemptible" and dec.per_hour == pytest.approx(0.22 + 0.01)
    p100 = Pricing(gce, as_of="2017-12", overrides={"gpu": "n1-standard-1+P100"}).cost(
        "gpu", 8, 20, device="gpu"
    )
    assert p100.per_hour == pytest.approx(0.74) and p100.billed_seconds == 60
    od = Pricing(gce, as_of="2017-12", tier="on_demand").cost("gpu", 1, 3600, device="gpu")
    assert od.cost == pytest.approx(0.4975)


def test_cells_map_to_the_smallest_instance_with_enough_vcpus(gce):
    pricing = Pricing(gce)
    inst, why = pricing.instance_for("local", 2)
    assert inst.name == "n1-highcpu-8" and "at least 2 vCPUs" in why
    assert pricing.instance_for("local", 128) is None
    assert pricing.cost("local", 128, 10) is None
    mapped = Pricing(gce, overrides={"pip@8": "n1-highcpu-16"})
    assert mapped.cost("pip", 8, 3600).instance == "n1-highcpu-16"
    assert mapped.cost("compiled", 8, 3600).instance == "n1-highcpu-8"


def test_pricing_option_parses_date_and_mapping():
    p = parse_pricing_option("gce-2017@2017-11", instance_map=["pip@8=n1-highcpu-16"])
    assert p.effective_as_of == "2017-11"
    assert p.overrides == {"pip@8": "n1-highcpu-16"}
    with pytest.raises(UserError, match="VARIANT"):
        parse_pricing_option("gce-2017", instance_map=["nonsense"])
    with pytest.raises(UserError, match="no instance 'n1-bogus'"):
        parse_pricing_option("gce-2017", instance_map=["pip=n1-bogus"])
    with pytest.raises(UserError, match="no pricing catalog"):
        parse_pricing_option("aws-2031")


GOOD = """
name = "mine"
source = "me"
[billing]
rule = "per_hour"
[[instance]]
name = "big"
vcpus = 4
prices = [{ as_of = "2026-01", on_demand = 1.0 }]
"""


def test_user_catalog_file(tmp_path):
    f = tmp_path / "mine.toml"
    f.write_text(GOOD)
    cat = load_catalog(str(f))
    assert Pricing(cat).cost("x", 4, 61).cost == pytest.approx(1.0)  # one started hour


@pytest.mark.parametrize(
    "text, message",
    [
        (GOOD.replace('rule = "per_hour"', 'rule = "per_hour'), r"invalid TOML: .*line 5"),
        (GOOD.replace("vcpus = 4", "vcpus = -4"), r"instance 'big', field 'vcpus'"),
        (
            GOOD.replace("on_demand = 1.0", "on_demand = -1.0"),
            r"instance 'big', field 'prices\[0\]'.*greater than 0",
        ),
        (
            GOOD.replace("on_demand = 1.0", 'on_demand = "1.0"'),
            r"prices\[0\]'.on_demand: expected a number",
        ),
        (GOOD.replace('as_of = "2026-01"', 'as_of = "jan"'), r"as_of: expected YYYY-MM"),
        (GOOD.replace('rule = "per_hour"', 'rule = "per_fortnight"'), r"field 'billing.rule'"),
        (GOOD.replace('source = "me"', ""), r"field 'source'"),
        (GOOD.replace("on_demand = 1.0", "spotty = 1.0"), "unknown field 'spotty'"),
    ],
)
def test_malformed_catalogs_name_file_and_field(tmp_path, text, message):
    f = tmp_path / "bad.toml"
    f.write_text(text)
    with pytest.raises(UserError, match=message) as exc:
        load_catalog(str(f))
    assert str(f) in str(exc.value)
    assert "\n" not in str(exc.value)


def test_every_amount_is_in_the_catalogs_currency(tmp_path, monkeypatch, capsys):
    """A EUR catalog is billed in EUR: report, conclusions, CSV (never as "$")."""
    import csv
    import re

    import resultfactory as rf

    from tfvariants.cli import main

    monkeypatch.chdir(tmp_path)
    results = [
        rf.make_result("local", t, "mnist_mlp", r, steady_epoch_s=2.0 / t, noise=0.02)
        for r in range(4)
        for t in (1, 2)
    ]
    rf.write_results(tmp_path / "R", results)
    (tmp_path / "eur.toml").write_text(
        GOOD.replace('source = "me"', 'source = "me"\ncurrency = "EUR"')
    )
    argv = [
        "report",
        "R",
        "-o",
        "out.html",
        "--csv",
        "out.csv",
        "--pricing",
        "eur.toml",
        "--instance",
        "local=big",
        "--verbose",  # the sentences too
    ]
    assert main(argv) == 0
    html = (tmp_path / "out.html").read_text()
    assert re.search(r"\d EUR", html) and not re.search(r"\$\s?\d", html)
    rows = list(csv.DictReader((tmp_path / "out.csv").open()))
    assert {r["currency"] for r in rows} == {"EUR"}
    out = capsys.readouterr().out
    assert re.search(r"Cheapest: .* at [\d.]+ EUR per full training run", out), out
