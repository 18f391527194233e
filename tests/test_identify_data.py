"""Measured records: CSV/NPZ round trips, and every malformed file raises an error
that names the file and the column (jaxfric.io.records, identify._record,
_experiment)."""

import jax.numpy as jnp
import numpy as np
import pytest

import jaxfric as jf
from jaxfric.identify import (
    Experiment,
    Record,
    RecordError,
    from_record,
    stack_experiments,
    synthesize_record,
)
from jaxfric.io import load_record, save_record


def _record(n=2, with_qd=True, with_u=True, T=7):
    rng = np.random.default_rng(0)
    ts = np.linspace(0.0, 0.6, T)
    return Record(
        ts=ts,
        q=rng.normal(size=(T, n)),
        qd=rng.normal(size=(T, n)) if with_qd else None,
        u=rng.normal(size=(T, n)) if with_u else None,
    )


@pytest.mark.parametrize("ext", [".csv", ".npz"])
@pytest.mark.parametrize("n", [1, 3])
@pytest.mark.parametrize("optional", [True, False])
def test_round_trip_is_exact(tmp_path, ext, n, optional):
    # "%.17g" in CSV and binary NPZ both round-trip float64 exactly.
    rec = _record(n, with_qd=optional, with_u=optional)
    path = tmp_path / f"rec{ext}"
    save_record(path, rec)
    back = load_record(path)
    assert back.source == str(path)
    np.testing.assert_array_equal(back.ts, rec.ts)
    np.testing.assert_array_equal(back.q, rec.q)
    for name in ("qd", "u"):
        if optional:
            np.testing.assert_array_equal(getattr(back, name), getattr(rec, name))
        else:
            assert getattr(back, name) is None


def test_csv_column_names(tmp_path):
    save_record(tmp_path / "a.csv", _record(1))
    header = (tmp_path / "a.csv").read_text().splitlines()[0]
    assert header == "t,q,qd,u"
    save_record(tmp_path / "b.csv", _record(2, with_qd=False))
    header = (tmp_path / "b.csv").read_text().splitlines()[0]
    assert header == "t,q0,q1,u0,u1"


def _write_csv(path, header, rows):
    lines = [",".join(header)] + [",".join(str(v) for v in r) for r in rows]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _check_error(path, *fragments):
    with pytest.raises(RecordError) as info:
        load_record(path)
    message = str(info.value)
    assert str(path) in message, message
    for fragment in fragments:
        assert fragment in message, message
    return message


def test_nan_names_file_and_column(tmp_path):
    path = _write_csv(
        tmp_path / "nan.csv",
        ["t", "q0", "q1"],
        [[0.0, 1.0, 2.0], [0.1, 1.0, "nan"], [0.2, 1.0, 2.0]],
    )
    _check_error(path, "'q1'", "row 1")


def test_inf_in_time_names_t(tmp_path):
    path = tmp_path / "inf.npz"
    np.savez(path, t=np.array([0.0, np.inf, 1.0]), q=np.zeros(3))
    _check_error(path, "'t'")


@pytest.mark.parametrize("times", [[0.0, 0.2, 0.1], [0.0, 0.1, 0.1]])
def test_non_increasing_time(tmp_path, times):
    path = _write_csv(tmp_path / "t.csv", ["t", "q"], [[t, 0.0] for t in times])
    _check_error(path, "'t'", "strictly increasing")


def test_mismatched_lengths_npz(tmp_path):
    path = tmp_path / "len.npz"
    np.savez(path, t=np.linspace(0, 1, 5), q=np.zeros(5), u=np.zeros(4))
    _check_error(path, "'u'", "4", "5")


def test_short_csv_row(tmp_path):
    path = tmp_path / "row.csv"
    path.write_text("t,q,u\n0.0,1.0,2.0\n0.1,1.0\n")
    _check_error(str(path), "row 1")


def test_unknown_column(tmp_path):
    path = _write_csv(
        tmp_path / "unk.csv", ["t", "q", "torque"], [[0, 0, 0], [1, 0, 0]]
    )
    _check_error(path, "'torque'", "unknown column")


def test_missing_time_and_positions(tmp_path):
    path = _write_csv(tmp_path / "not.csv", ["q"], [[0.0], [1.0]])
    _check_error(path, "'t'", "missing")
    path = _write_csv(tmp_path / "noq.csv", ["t", "u"], [[0.0, 0.0], [1.0, 0.0]])
    _check_error(path, "'q'", "missing")


def test_gap_in_indexed_columns(tmp_path):
    path = _write_csv(
        tmp_path / "gap.csv", ["t", "q0", "q2"], [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]]
    )
    _check_error(path, "'q1'", "missing")


def test_plain_and_indexed_together(tmp_path):
    path = _write_csv(
        tmp_path / "both.csv", ["t", "q", "q0"], [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]]
    )
    _check_error(path, "'q'")


def test_not_a_number(tmp_path):
    path = tmp_path / "txt.csv"
    path.write_text("t,q\n0.0,1.0\n0.1,abc\n")
    _check_error(str(path), "'q'", "row 1", "abc")


def test_duplicate_column(tmp_path):
    path = tmp_path / "dup.csv"
    path.write_text("t,q,q\n0.0,1.0,1.0\n0.1,1.0,1.0\n")
    _check_error(str(path), "'q'", "twice")


def test_velocity_width_mismatch(tmp_path):
    path = tmp_path / "qd.npz"
    np.savez(path, t=np.linspace(0, 1, 4), q=np.zeros((4, 2)), qd=np.zeros((4, 3)))
    _check_error(path, "'qd'")


def test_unknown_extension(tmp_path):
    with pytest.raises(RecordError, match="rec.txt"):
        load_record(tmp_path / "rec.txt")


def test_from_record_interpolates_inputs():
    # Linear interpolation of the samples (numpy.interp is the reference).
    rec = _record(1, with_qd=False)
    exp = from_record(rec)
    t = 0.123
    expected = np.interp(t, rec.ts, rec.u[:, 0])
    zero = jnp.zeros(1)
    np.testing.assert_allclose(exp.force(t, zero, zero), expected, rtol=1e-14)
    np.testing.assert_array_equal(exp.q0, rec.q[0])
    np.testing.assert_array_equal(exp.qd0, np.zeros(1))


def test_experiment_checks():
    ts = np.linspace(0, 1, 5)
    with pytest.raises(ValueError, match="strictly increasing"):
        Experiment(ts[::-1], np.zeros(5))
    with pytest.raises(ValueError, match="samples"):
        Experiment(ts, np.zeros(4))
    with pytest.raises(ValueError, match="`qd`"):
        Experiment(ts, np.zeros(5), np.zeros((5, 2)))
    with pytest.raises(ValueError, match="`q`"):
        Experiment(ts, np.full(5, np.nan))
    with pytest.raises(TypeError, match="force"):
        Experiment(ts, np.zeros(5), force=lambda t, q, qd: 0.0)


def test_stack_experiments_checks():
    ts = np.linspace(0, 1, 5)
    a = Experiment(ts, np.zeros(5), force=jf.forces.Sine(1.0, 2.0))
    b = Experiment(ts, np.ones(5), force=jf.forces.Sine(2.0, 3.0))
    both = stack_experiments([a, b])
    assert both.q.shape == (2, 5, 1)
    assert both.force.amplitude.shape == (2,)
    with pytest.raises(ValueError, match="same number of samples"):
        stack_experiments(
            [
                a,
                Experiment(
                    np.linspace(0, 1, 6), np.zeros(6), force=jf.forces.Sine(1.0, 2.0)
                ),
            ]
        )
    with pytest.raises(ValueError, match="structure"):
        stack_experiments([a, Experiment(ts, np.zeros(5))])


def test_synthesize_record_noise_is_relative_to_rms():
    # Reference: jaxfric.simulate of the same model (noise 0 reproduces it
    # exactly); the noise's sample standard deviation over 2001 samples is
    # within 5 % of noise * RMS(q) (the standard error of a sample standard
    # deviation is 1/sqrt(2 N) = 1.6 %).
    system, law = jf.systems.Oscillator(1.0, 4.0), jf.Coulomb(0.5)
    force = jf.forces.Sine(2.0, 2.0)
    ts = np.linspace(0.0, 4.0, 2001)
    clean = np.asarray(jf.simulate(system, law, 0.0, 0.0, 4.0, ts=ts, force=force).q)
    exact = synthesize_record(system, law, ts, force=force)
    np.testing.assert_array_equal(exact.q, clean)
    noisy = synthesize_record(system, law, ts, force=force, noise=0.01, seed=[3, 1])
    rms = np.sqrt(np.mean(clean**2))
    np.testing.assert_allclose(np.std(noisy.q - clean), 0.01 * rms, rtol=0.05)
    again = synthesize_record(system, law, ts, force=force, noise=0.01, seed=[3, 1])
    np.testing.assert_array_equal(again.q, noisy.q)
    with pytest.raises(ValueError, match="noise"):
        synthesize_record(system, law, ts, force=force, noise=-1.0)
