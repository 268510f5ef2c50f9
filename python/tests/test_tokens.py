"""TokenWindows: nanoGPT's get_batch windows, byte-identical to numpy.memmap, drawn a bounded lookahead ahead."""

import os
import subprocess
import sys

import pytest

import libprefetch

import numpy  # installed by `make python`; token windows need it

BLOCK = 300


@pytest.fixture(scope="module")
def tokens_file(tmp_path_factory):
    """(path, tokens) of 1 MiB of random uint16 tokens plus one odd byte (not a whole token)."""
    tokens = numpy.random.default_rng(3).integers(0, 1 << 16, size=1 << 19, dtype=numpy.uint16)
    path = tmp_path_factory.mktemp("tokens") / "train.bin"
    path.write_bytes(tokens.tobytes() + b"\x01")
    return path, tokens


def draws(windows, steps, batch, seed, made):
    """nanoGPT's draw of each step's starts; ``made`` counts the steps drawn so far."""
    rng = numpy.random.default_rng(seed)
    for _ in range(steps):
        made.append(1)
        yield rng.integers(windows.starts, size=batch)


def test_windows_are_the_memmaps_and_drawn_at_most_lookahead_steps_ahead(tokens_file):
    path, tokens = tokens_file
    memmap = numpy.memmap(path, dtype=numpy.uint16, mode="r", shape=(len(tokens),))
    with libprefetch.TokenWindows(path, block_size=BLOCK, lookahead=4) as windows:
        assert windows.tokens == len(tokens) and windows.starts == len(tokens) - BLOCK
        made, steps = [], 0
        expected = numpy.random.default_rng(11)
        for x, y in windows.batches(draws(windows, 25, 12, 11, made)):
            starts = expected.integers(windows.starts, size=12)
            assert x.shape == y.shape == (12, BLOCK) and x.dtype == numpy.uint16
            assert all((x[r] == memmap[s : s + BLOCK]).all() and (y[r] == memmap[s + 1 : s + 1 + BLOCK]).all() for r, s in enumerate(starts))
            steps += 1
            assert len(made) - steps <= 4
        stats = windows.stats()
    assert steps == 25 and stats.tracked_reads == 25 * 12 and stats.divergences == 0 and stats.rounds >= 1


def test_a_start_out_of_range_is_refused_when_drawn(tokens_file):
    path, tokens = tokens_file
    with libprefetch.TokenWindows(path, block_size=BLOCK) as windows:
        with pytest.raises(IndexError):
            next(windows.batches([[0, windows.starts]]))
        with pytest.raises(IndexError):
            next(windows.batches([[-1]]))
        x, y = next(windows.batches([[windows.starts - 1]]))
        assert (y[0] == tokens[-BLOCK:]).all()
    with pytest.raises(ValueError):
        libprefetch.TokenWindows(path, block_size=len(tokens))


def test_importing_the_package_does_not_import_numpy():
    code = "import sys, libprefetch; print('numpy' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"
