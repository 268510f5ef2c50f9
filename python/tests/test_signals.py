"""A signal reaches the program as without the library: KeyboardInterrupt (Ctrl-C), SystemExit and what a
signal handler raises while a callback runs are raised by the read's call, not reported as unraisable; an
epoch interrupted so loses no record."""

import os
import signal
import subprocess
import sys
import textwrap

import pytest

import libprefetch

PAGE = 4096


def test_ctrl_c_in_a_callback_is_raised_by_the_read(data_file, monkeypatch, request):
    path, data = data_file
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    # Python's own Ctrl-C handler, even where the tests were started with SIGINT ignored (a shell's
    # background job without job control).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    request.addfinalizer(lambda: signal.signal(signal.SIGINT, previous))

    armed = []

    def callback(client, info):
        if armed:
            armed.clear()
            os.kill(os.getpid(), signal.SIGINT)  # the default handler raises KeyboardInterrupt in here

    with libprefetch.Client(callback) as client, client.region(path) as region:
        client.request([PAGE], done=True)
        armed.append(True)
        with pytest.raises(KeyboardInterrupt):
            region.pread(100, 50 * PAGE)
        assert region.pread(100, 50 * PAGE) == data[50 * PAGE : 50 * PAGE + 100]
    assert unraisable == []


class Stop(Exception):
    """What the test's own signal handler raises."""


def test_what_a_signal_handler_raises_in_a_callback_is_raised_by_the_read(data_file, monkeypatch):
    path, _ = data_file
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)

    def handler(number, frame):
        raise Stop(number)

    armed = []

    def callback(client, info):
        if armed:
            armed.clear()
            os.kill(os.getpid(), signal.SIGUSR1)

    previous = signal.signal(signal.SIGUSR1, handler)
    try:
        with libprefetch.Client(callback) as client, client.region(path) as region:
            client.request([PAGE], done=True)
            armed.append(True)
            with pytest.raises(Stop):
                region.pread(100, 50 * PAGE)
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert unraisable == []


#: Iterates epochs of FILE in 4 KiB records with a 16-entry list (a callback every few records), prints
#: "started" after the first record; on KeyboardInterrupt finishes the epoch and checks that every record
#: came once, in order.
CHILD = textwrap.dedent(
    """
    import os, signal, sys, libprefetch
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as at a terminal, even if started with SIGINT ignored
    path = sys.argv[1]
    count = os.path.getsize(path) // 4096
    records = libprefetch.Records(path, [i * 4096 for i in range(count)], [4096] * count)
    order = records.order(seed=1)
    expected = [records[i] for i in order]
    for round in range(1000):
        epoch = records.epoch(order, list_capacity=16)
        got = []
        try:
            for record in epoch:
                got.append(record)
                if round == 0 and len(got) == 1:
                    print("started", flush=True)
        except KeyboardInterrupt:
            got.extend(epoch)
            print("INTERRUPTED", "intact" if got == expected else "records lost", flush=True)
            sys.exit(0)
    print("COMPLETED: the KeyboardInterrupt was lost", flush=True)
    """
)


@pytest.mark.parametrize("attempt", range(6))
def test_ctrl_c_from_another_process_interrupts_an_epoch(data_file, attempt):
    path, _ = data_file
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout.readline() == "started\n"
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=600)  # a deadlock detector, not a performance limit
    assert out == "INTERRUPTED intact\n", err
    assert "Exception ignored" not in err
