"""RecordDataset under DataLoader's protocol, reproduced here without torch.

``torch.utils.data.DataLoader`` with ``num_workers=N`` groups the sampler's indices into batches
(``BatchSampler``: ``batch_size`` consecutive indices, the short last one dropped with ``drop_last``),
and its main process puts batch ``t`` on the index queue of worker ``next(cycle(range(N)))``, keeping
``prefetch_factor * N`` batches outstanding; each worker process sets its ``WorkerInfo(id, num_workers,
seed, dataset)`` (returned by ``torch.utils.data.get_worker_info()``), calls ``worker_init_fn(id)``, then
fetches its queue's batches in order with ``[dataset[i] for i in batch]``. ``loader`` below does the
same with multiprocessing, "fork" and "spawn", and a stand-in ``torch.utils.data`` module in each worker.
"""

import array
import itertools
import multiprocessing
import os
import sys
import time
import types

import pytest

import libprefetch
from libprefetch import RecordDataset, worker_indices

#: How long the library keeps a reading of the memory available (crate libprefetch, memory.rs).
MEMORY_PROBE_INTERVAL = 0.010


def dispatch(order, batch_size, drop_last, workers):
    """The batches each worker is sent, in order: DataLoader's round-robin over its index queues."""
    if batch_size is None:
        batches = [[index] for index in order]
    else:
        batches = [order[s : s + batch_size] for s in range(0, len(order), batch_size)]
        if drop_last and batches and len(batches[-1]) < batch_size:
            batches.pop()
    sent = [[] for _ in range(workers)]
    cycle = itertools.cycle(range(workers))
    for batch in batches:
        sent[next(cycle)].append(batch)
    return sent


@pytest.mark.parametrize("batch_size,drop_last,workers", [(None, False, 3), (1, False, 1), (7, False, 4), (7, True, 4), (64, False, 2)])
def test_each_worker_plans_the_indices_dataloader_sends_it(batch_size, drop_last, workers):
    order = libprefetch.epoch_order(301, seed=5, epoch=2)
    sent = dispatch(order, batch_size, drop_last, workers)
    for worker in range(workers):
        planned = worker_indices(order, batch_size, drop_last, worker, workers)
        assert planned == [index for batch in sent[worker] for index in batch]


def test_the_sampler_gives_the_epochs_order(records_file):
    path, offsets, lengths, _ = records_file
    with libprefetch.Records(path, offsets, lengths) as records:
        dataset = RecordDataset(records, seed=3)
        first = list(dataset.sampler)
        dataset.set_epoch(1)
        second = list(dataset.sampler)
        assert sorted(first) == sorted(second) == list(range(len(records)))
        assert first != second and len(dataset.sampler) == len(records)
        dataset.set_epoch(0)
        assert list(dataset.sampler) == first == libprefetch.epoch_order(len(records), 3, 0)


def _worker_loop(dataset, worker_id, workers, tasks, results):
    """DataLoader's worker: its WorkerInfo, worker_init_fn, then the batches of its queue in order."""
    info = types.SimpleNamespace(id=worker_id, num_workers=workers, seed=worker_id, dataset=dataset)
    torch = types.ModuleType("torch")
    torch.utils = types.ModuleType("torch.utils")
    torch.utils.data = types.ModuleType("torch.utils.data")
    torch.utils.data.get_worker_info = lambda: info
    sys.modules.update({"torch": torch, "torch.utils": torch.utils, "torch.utils.data": torch.utils.data})
    libprefetch.worker_init(worker_id)
    received = []
    while (task := tasks.get()) is not None:
        number, batch = task
        received.extend(batch)
        results.put((number, [dataset[index] for index in batch]))
    results.put(("done", worker_id, received, dataset.stats(), dataset.summary()))


def loader(dataset, method, workers, batch_size, prefetch_factor=2):
    """Iterates ``dataset`` as DataLoader(sampler=dataset.sampler, num_workers=workers) does: returns
    the batches in order and, per worker, (indices it read, its stats, its summary line)."""
    context = multiprocessing.get_context(method)
    tasks = [context.Queue() for _ in range(workers)]
    results = context.Queue()
    processes = [
        context.Process(target=_worker_loop, args=(dataset, w, workers, tasks[w], results)) for w in range(workers)
    ]
    for process in processes:
        process.start()
    order = list(dataset.sampler)
    batches = [order[s : s + batch_size] for s in range(0, len(order), batch_size)]
    cycle = itertools.cycle(range(workers))
    sent = 0
    done, got, reports = 0, {}, {}
    try:
        while sent < min(prefetch_factor * workers, len(batches)):
            tasks[next(cycle)].put((sent, batches[sent]))
            sent += 1
        while len(got) < len(batches):
            number, data = results.get(timeout=60)
            got[number] = data
            if sent < len(batches):
                tasks[next(cycle)].put((sent, batches[sent]))
                sent += 1
        for task in tasks:
            task.put(None)
        while done < workers:
            _, worker, received, stats, summary = results.get(timeout=60)
            reports[worker] = (received, stats, summary)
            done += 1
    finally:
        for process in processes:
            process.join(timeout=60)
            if process.is_alive():
                process.kill()
    return [got[n] for n in range(len(batches))], reports


def cold(path):
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)


def warm(path):
    with open(path, "rb") as file:
        file.read()


def device_costs(monkeypatch, far):
    """The device's measured far request (``None``: not measured), as the package reads it."""
    monkeypatch.setattr(libprefetch._native, "far_request_bytes", lambda fd: far)


OVER_BUDGET_WORKERS, OVER_BUDGET_BATCH, OVER_BUDGET = 3, 5, 2 << 20


def epoch_over_budget(records_file, method, far, monkeypatch):
    """An epoch of DataLoader-shaped workers under a budget below the records' pages, on a device
    whose far request costs `far` bytes (None: not measured), the file cold: the sampler's order,
    each worker's report, and what one WILLNEED loads on the file's device; the bytes checked."""
    device_costs(monkeypatch, far)
    path, offsets, lengths, data = records_file
    assert OVER_BUDGET < len(data)
    with libprefetch.Records(path, offsets, lengths) as records:
        dataset = RecordDataset(records, batch_size=OVER_BUDGET_BATCH, seed=7, max_memory=OVER_BUDGET)
        dataset.set_epoch(2)
        cold(path)
        batches, reports = loader(dataset, method, OVER_BUDGET_WORKERS, OVER_BUDGET_BATCH)
        order = list(dataset.sampler)
        willneed_limit = libprefetch._native.willneed_limit(records._fd)
    assert [record for batch in batches for record in batch] == [data[offsets[i] : offsets[i] + lengths[i]] for i in order]
    return order, reports, willneed_limit


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_dataloader_workers_prefetch_their_own_records_under_one_budget(records_file, method, monkeypatch):
    """A budget below the records' pages on a device not measured: no sweep, each worker's client
    follows its list."""
    order, reports, _ = epoch_over_budget(records_file, method, None, monkeypatch)
    lengths = records_file[2]
    for worker, (received, stats, summary) in reports.items():
        assert received == worker_indices(order, OVER_BUDGET_BATCH, False, worker, OVER_BUDGET_WORKERS)
        # Followed from its first record not wholly cached (the others' reads may have cached its first).
        assert 0 < stats.tracked_reads <= sum(1 for i in received if lengths[i]) and stats.divergences == 0
        assert stats.prefetched_used > 0 and 0 < stats.budget_bytes <= OVER_BUDGET
        assert summary.startswith(f"{len(received)}/{len(received)} records")


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_on_a_seek_bound_device_worker_0s_client_prefetches_every_workers_records(records_file, method, monkeypatch):
    """A budget below the records' pages on a device where a seek costs more than a record: worker
    0's client holds the whole epoch's reads with the whole budget, the other workers have none; the
    bytes are the same."""
    order, reports, _ = epoch_over_budget(records_file, method, 1 << 30, monkeypatch)
    lengths = records_file[2]
    for worker, (received, stats, summary) in reports.items():
        assert received == worker_indices(order, OVER_BUDGET_BATCH, False, worker, OVER_BUDGET_WORKERS)
        if worker == 0:
            assert 0 < stats.tracked_reads <= sum(1 for i in received if lengths[i]) and stats.divergences == 0
            assert stats.prefetched_used > 0 and 0 < stats.budget_bytes <= OVER_BUDGET
            assert summary.endswith("; its list holds every worker's records")
        else:
            assert stats is None
            assert summary == f"{len(received)}/{len(received)} records; prefetched by worker 0's client, none here"


def test_the_leading_worker_follows_its_reads_at_their_place_in_the_epoch(records_file, monkeypatch):
    """Where worker 0 leads, its client's list is every record the loader reads, in the epoch's order
    (``drop_last`` leaves the short last batch out), and each of worker 0's reads moves the list's
    position to that record's place in it."""
    device_costs(monkeypatch, 1 << 30)
    path, offsets, lengths, data = records_file
    with libprefetch.Records(path, offsets, lengths) as records:
        dataset = RecordDataset(records, batch_size=7, drop_last=True, seed=5, max_memory=256 << 10)
        order = dataset.order()
        read = order[: len(order) - len(order) % 7]
        dataset.start_worker(0, 3)
        cold(path)
        for index in worker_indices(order, 7, True, 0, 3):
            assert dataset[index] == data[offsets[index] : offsets[index] + lengths[index]]
            plan = dataset._worker._plan
            assert plan is not None and read[plan.position] == index
        assert list(plan.order) == read
        dataset.stop()


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_dataloader_workers_whose_epoch_does_not_fit_advise_their_lists_by_phases(records_file, method, monkeypatch):
    """A budget below the records' pages on a device where a seek costs less than a record: no sweep
    and no client, each worker advises its own list phase by phase, each phase a third of a quarter
    of the budget; the bytes are the same."""
    order, reports, willneed_limit = epoch_over_budget(records_file, method, 4096, monkeypatch)
    phase = min(willneed_limit, OVER_BUDGET // 4) // OVER_BUDGET_WORKERS
    for worker, (received, stats, summary) in reports.items():
        assert received == worker_indices(order, OVER_BUDGET_BATCH, False, worker, OVER_BUDGET_WORKERS)
        assert stats is None
        assert summary.startswith(f"{len(received)}/{len(received)} records; advised in ")
        assert summary.endswith(f" phases of at most {phase / (1 << 20):.1f} MiB, no client")


def test_workers_whose_epoch_fits_sweep_the_union_without_a_client(records_file):
    """Where the records fit and are not cached, each worker sweeps its share of the union and
    registers no client (one prefetcher, not a client's record-sized advice beside the sweeps): no
    counters, the summary says so, the bytes are the same."""
    path, offsets, lengths, data = records_file
    workers, batch_size = 3, 5
    with libprefetch.Records(path, offsets, lengths) as records:
        dataset = RecordDataset(records, batch_size=batch_size, seed=4)
        cold(path)
        batches, reports = loader(dataset, "fork", workers, batch_size)
        order = list(dataset.sampler)
    assert [record for batch in batches for record in batch] == [data[offsets[i] : offsets[i] + lengths[i]] for i in order]
    for worker, (received, stats, summary) in reports.items():
        assert received == worker_indices(order, batch_size, False, worker, workers)
        assert stats is None
        assert summary == f"{len(received)}/{len(received)} records; its share of the epoch's union swept, no client"


def test_a_read_off_the_plan_ends_prefetching_and_reads_the_same_bytes(records_file):
    path, offsets, lengths, data = records_file
    with libprefetch.Records(path, offsets, lengths) as records:
        dataset = RecordDataset(records, batch_size=None, seed=1)
        order = list(dataset.sampler)
        warm(path)
        dataset.start_worker(0, 1)  # its share cached: no sweep, a client once a record misses
        cold(path)
        first = next(k for k, i in enumerate(order) if lengths[i])  # an empty record misses nothing
        for i in order[: first + 1]:
            assert dataset[i] == data[offsets[i] : offsets[i] + lengths[i]]
        planned = dataset.stats().tracked_reads
        wrong = order[first + 2]
        assert dataset[wrong] == data[offsets[wrong] : offsets[wrong] + lengths[wrong]]
        nxt = order[first + 1]
        assert dataset[nxt] == data[offsets[nxt] : offsets[nxt] + lengths[nxt]]
        assert dataset.stats().tracked_reads == planned  # the client was closed before the wrong read
        dataset.stop()


def _plan_alongside(records, mine, budget, holding, results, reader):
    """A reader of the records ``mine`` (an epoch) that reads all but its last record once ``holding``
    (a barrier of every reader holding its list) is passed, so that all of them share the budget
    throughout; sends its stats."""
    epoch = records.epoch(mine, max_memory=budget)
    reading = iter(epoch)
    read = 0
    while epoch.stats() is None:  # the client starts at the first record not cached (the file is cold)
        next(reading)
        read += 1
    holding.wait()
    time.sleep(2 * MEMORY_PROBE_INTERVAL)  # the memory reading taken before the others joined is stale
    for _ in mine[read:-1]:
        next(reading)
    holding.wait()  # nobody's list is done before every reader has read
    results.put((reader, epoch.stats()))
    epoch.close()


def budgets(records, order, budget, readers):
    """Each reader's final budget when ``readers`` forked processes read their shares of ``order``
    together (as DataLoader's workers are handed batches of 2)."""
    context = multiprocessing.get_context("fork")
    holding, results = context.Barrier(readers), context.Queue()
    processes = [
        context.Process(
            target=_plan_alongside,
            args=(records, worker_indices(order, 2, False, r, readers), budget, holding, results, r),
        )
        for r in range(readers)
    ]
    for process in processes:
        process.start()
    found = dict(results.get(timeout=60) for _ in processes)
    for process in processes:
        process.join(timeout=60)
    return [found[r] for r in range(readers)]


def test_readers_of_one_epoch_share_one_budget(records_file):
    """The library divides ``max_memory`` by the processes holding a list (one table per memory
    cgroup, crate libprefetch's share.rs): alone an epoch's reader may plan with all of it, two reading
    together with at most half each. (A worker of a ``RecordDataset`` whose records do not fit
    advises by phases of its share of the budget instead: no client.)"""
    if not os.path.isdir("/dev/shm"):
        pytest.skip("kernel feature missing: no /dev/shm (POSIX shared memory), processes cannot share a budget")
    path, offsets, lengths, _ = records_file
    budget = 256 << 10
    with libprefetch.Records(path, offsets, lengths) as records:
        order = libprefetch.epoch_order(len(records), 1, 0)
        cold(path)
        (alone,) = budgets(records, order, budget, 1)
        cold(path)
        together = budgets(records, order, budget, 2)
        dataset = RecordDataset(records, batch_size=2, seed=1, max_memory=budget)
        with pytest.raises(ValueError):
            dataset.start_worker(4, 4)
    assert 0 < alone.budget_bytes <= budget and alone.divergences == 0
    for stats in together:
        assert 0 < stats.budget_bytes <= budget // 2 and stats.divergences == 0 and stats.prefetched_used > 0


def test_an_epoch_summary_accounts_for_its_pages(records_file):
    path, offsets, lengths, data = records_file
    page = os.sysconf("SC_PAGE_SIZE")
    with libprefetch.Records(path, offsets, lengths) as records:
        order = records.order(seed=9)
        epoch = records.epoch(order, max_memory=len(data) // 4)  # below its pages: a client, no sweep
        assert epoch.summary() == "the epoch has not started"
        cold(path)
        for _ in epoch:
            pass
        stats = epoch.stats()
        line = epoch.summary()
    distinct = {p for i in order if lengths[i] for p in range(offsets[i] // page, (offsets[i] + lengths[i] - 1) // page + 1)}
    assert line.startswith(f"{len(order)}/{len(order)} records, {len(distinct)} distinct pages; ")
    assert f"prefetched {stats.pages_prefetched} pages: used {stats.prefetched_used}, " in line
    assert f"dropped unused {stats.prefetched_unused_dropped} " in line
    assert f"dropped after use {stats.pages_dropped - stats.prefetched_unused_dropped};" in line


@pytest.mark.parametrize("workers", [1, 3, 4])
def test_the_workers_shares_of_the_union_cover_it_once_in_offset_order(records_file, workers):
    from libprefetch._loader import share, union_extents

    path, offsets, lengths, _ = records_file
    page = os.sysconf("SC_PAGE_SIZE")
    with libprefetch.Records(path, offsets, lengths) as records:
        union = union_extents(records)
    wanted = {p for o, n in zip(offsets, lengths) if n for p in range(o // page, (o + n - 1) // page + 1)}
    limit = 5 * page  # calls of at most 5 pages: records cross their ends
    calls = [call for worker in range(workers) for call in share(union, page, worker, workers, limit)]
    assert calls == sorted(calls) and all(0 < length <= limit for _, length in calls)
    covered = [p for offset, length in calls for p in range(offset // page, (offset + length - 1) // page + 1)]
    assert len(covered) == len(set(covered)) and set(covered) == wanted


def test_a_share_of_extents_that_are_not_pairs_is_a_clear_error():
    from libprefetch import _native

    odd = array.array("q", [0, 4096, 8192]).tobytes()
    with pytest.raises(ValueError, match="pairs"):
        _native.share(odd, 4096, 0, 1, 1 << 20)


def test_a_worker_whose_epoch_fits_advises_its_share_of_the_union(records_file, advised):
    """Worker 1 of 2 advises WILLNEED its share of the records' pages, in offset order, before its
    first read (the kernel reads them as it can: the advice is a hint); it sweeps nothing when its
    share is cached already. The bytes are the same."""
    from libprefetch import _loader

    path, offsets, lengths, data = records_file
    page = os.sysconf("SC_PAGE_SIZE")
    with libprefetch.Records(path, offsets, lengths) as records:
        mine = worker_indices(libprefetch.epoch_order(len(records), 2, 0), 4, False, 1, 2)
        wanted = [data[offsets[i] : offsets[i] + lengths[i]] for i in mine]
        limit = _loader._native.willneed_limit(records._fd)
        expected = _loader.share(_loader.union_extents(records), page, 1, 2, limit)
        for cached, sweeps in ((False, True), (True, False)):
            fd = os.open(path, os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            if cached:
                os.pread(fd, len(data), 0)
            os.close(fd)
            advised.clear()
            dataset = RecordDataset(records, batch_size=4, seed=2)
            dataset.start_worker(1, 2)
            assert (dataset._worker.sweep is not None) == sweeps and dataset._worker.phases is None
            assert dataset._worker._client is None  # none before a record misses, none for a sweeper
            assert [dataset[i] for i in mine] == wanted
            # A client only where a record missed and nothing was swept.
            assert (dataset.stats() is not None) == (not sweeps and not cached)
            dataset.stop()
            assert advised == (expected if sweeps else [])


def test_a_sweep_skips_ranges_already_cached(records_file):
    """The native WILLNEED of a sweep advises only ranges with a page missing from the cache."""
    path, _, _, data = records_file
    page = os.sysconf("SC_PAGE_SIZE")
    ranges = array.array("q", [0, 4 * page, 8 * page, 4 * page]).tobytes()
    fd = os.open(path, os.O_RDONLY)
    try:
        os.pread(fd, len(data), 0)  # every page cached
        assert libprefetch._native.willneed(fd, ranges) == 0
        # Drop the whole file (a large folio is not dropped in part), then read pages 0..4 back one
        # at a time without read-ahead: the first range is cached, the second is not.
        for advice in (os.POSIX_FADV_DONTNEED, os.POSIX_FADV_RANDOM):
            os.posix_fadvise(fd, 0, 0, advice)
        for index in range(4):
            os.pread(fd, page, index * page)
        assert libprefetch._native.willneed(fd, ranges) == 1
    finally:
        os.close(fd)


def test_the_advice_threads_carry_their_names_where_the_system_shows_threads(records_file, monkeypatch):
    """A worker's advice is given from a thread the system names ``prefetch-sweep`` where the records
    fit and ``prefetch-phases`` where they do not (``/proc/PID/task/TID/comm``: what ``top -H`` and
    the benchmark's ``--detail`` show), never from its reader; the reader keeps its name."""
    from libprefetch import _native

    names = []
    willneed = _native.willneed

    def naming(fd, ranges):
        with open("/proc/thread-self/comm") as comm:
            names.append(comm.read().strip())
        return willneed(fd, ranges)

    monkeypatch.setattr(_native, "willneed", naming)
    path, offsets, lengths, _ = records_file
    reader = open("/proc/thread-self/comm").read()
    with libprefetch.Records(path, offsets, lengths) as records:
        for budget, far, name in ((None, None, "prefetch-sweep"), (256 << 10, 0, "prefetch-phases")):
            device_costs(monkeypatch, far)
            cold(path)
            names.clear()
            dataset = RecordDataset(records, batch_size=4, seed=2, max_memory=budget)
            dataset.start_worker(1, 2)
            for index in worker_indices(dataset.order(), 4, False, 1, 2):
                dataset[index]
            dataset.stop()
            assert names and set(names) == {name}
    assert open("/proc/thread-self/comm").read() == reader


def test_a_worker_whose_epoch_does_not_fit_advises_its_list_a_phase_ahead(records_file, advised, monkeypatch):
    """Where the records do not fit, worker 1 of 2 advises its own records phase by phase, each
    phase's pages in offset order: phases 0 and 1 at once, phase ``k + 1`` only once its reader has
    entered phase ``k`` (so at most two phases are advised ahead of the reader), and no client. The
    bytes are the same."""
    from libprefetch import _phases

    device_costs(monkeypatch, 0)
    path, offsets, lengths, data = records_file
    budget = 256 << 10
    computed = []  # (phase, the reader's position) as the advice thread takes up each phase
    ranges = _phases.Phases.ranges

    def recording(self, phase):
        worker = dataset._worker  # None until start_worker returns: no read yet
        computed.append((phase, worker._next if worker is not None else 0))
        return ranges(self, phase)

    monkeypatch.setattr(_phases.Phases, "ranges", recording)
    with libprefetch.Records(path, offsets, lengths) as records:
        mine = worker_indices(libprefetch.epoch_order(len(records), 2, 0), 4, False, 1, 2)
        cold(path)
        dataset = RecordDataset(records, batch_size=4, seed=2, max_memory=budget)
        dataset.start_worker(1, 2)
        phases = dataset._worker.phases
        assert dataset._worker.sweep is None and phases is not None
        assert phases.phase_bytes == min(libprefetch._native.willneed_limit(records._fd), budget // 4) // 2
        for _ in range(1000):  # the first two phases are advised before any read
            if len(computed) >= 2:
                break
            time.sleep(0.01)
        assert [phase for phase, _ in computed[:2]] == [0, 1]
        assert [dataset[i] for i in mine] == [data[offsets[i] : offsets[i] + lengths[i]] for i in mine]
        assert dataset.stats() is None
        dataset.stop()
        taken = [ranges(phases, phase) for phase, _ in computed]
    assert len(phases.starts) > 3 and [phase for phase, _ in computed] == list(range(len(computed)))
    for phase, position in computed[2:]:
        assert position >= phases.starts[phase - 1]
    # The phases taken up, in order; the stop may come between the last one's ranges and its advice.
    assert advised in ([call for calls in taken for call in calls], [call for calls in taken[:-1] for call in calls])


def test_phases_hold_at_most_their_bytes_of_pages_and_cover_the_order(records_file):
    from libprefetch._native import LoaderPhases

    path, offsets, lengths, _ = records_file
    page = os.sysconf("SC_PAGE_SIZE")
    with libprefetch.Records(path, offsets, lengths) as records:
        order = array.array("q", libprefetch.epoch_order(len(records), 4, 0))
        for phase_bytes in (1, 3 * page, 64 << 10):
            layout = records._offsets.tobytes(), records._lengths.tobytes()
            starts = LoaderPhases(*layout, order.tobytes(), page, phase_bytes).starts
            assert starts[0] == 0 and starts == sorted(set(starts))
            for start, end in zip(starts, starts[1:] + [len(order)]):
                pages = [(-(-(offsets[i] + lengths[i]) // page) - offsets[i] // page) * page for i in order[start:end]]
                assert end > start and (sum(pages) <= phase_bytes or sum(pages[1:]) == 0)
                if end < len(order):  # the next record would not have fit
                    nxt = order[end]
                    assert sum(pages) + (-(-(offsets[nxt] + lengths[nxt]) // page) - offsets[nxt] // page) * page > phase_bytes


def test_phases_advise_where_a_seek_costs_at_most_a_record(records_file, monkeypatch):
    """Where the records do not fit, a worker advises by phases only on a device whose measured far
    request costs at most the records' mean pages; a client otherwise, or on a device not measured."""
    path, offsets, lengths, _ = records_file
    page = os.sysconf("SC_PAGE_SIZE")
    with libprefetch.Records(path, offsets, lengths) as records:
        spans = [(-(-(o + n) // page) - o // page) * page for o, n in zip(offsets, lengths) if n]
        mean = sum(spans) // len(records)
        for far, phased in ((None, False), (mean + page, False), (mean, True), (0, True)):
            device_costs(monkeypatch, far)
            dataset = RecordDataset(records, batch_size=4, seed=2, max_memory=256 << 10)
            dataset.start_worker(0, 2)
            assert (dataset._worker.phases is not None) == phased and dataset._worker.sweep is None
            dataset.stop()


def test_the_simulator_runs_a_workers_phases_as_the_package_advises_them(tmp_path):
    """``libprefetch.sim`` runs ``loader-phases`` on a worker's trace (one line a record) with the
    package's own schedule: the device serves one request for each WILLNEED call ``LoaderPhases``
    makes for that worker, and fetches each page of its records once (records apart on disk, a cache
    that evicts nothing)."""
    import random

    from libprefetch import sim
    from libprefetch._native import LoaderPhases

    page, draw = 4096, random.Random(7)
    offsets, lengths, at = [], [], 0
    for _ in range(300):
        at += draw.randint(1, 4) * page  # a gap of at least a page: no two records touch
        offsets.append(at)
        lengths.append(draw.randint(1, 5 * page))
        at += -(-lengths[-1] // page) * page
    mine = array.array("q", worker_indices(libprefetch.epoch_order(300, 3, 0), 4, False, 1, 3))
    phase = 16 * page
    layout = array.array("q", offsets).tobytes(), array.array("q", lengths).tobytes()
    plan = LoaderPhases(*layout, mine.tobytes(), page, phase)
    calls = [array.array("q", plan.calls(k, 1 << 20)) for k in range(len(plan.starts))]
    trace = tmp_path / "worker.csv"
    trace.write_text("".join(f"0,records,{offsets[i]},{lengths[i]},R\n" for i in mine))
    policy = f"loader-phases:phase={phase},call=1M"
    (row,) = sim.run(str(trace), policy, 1 << 16, device="ssd:100,8,500", block_size=page)
    assert len(plan.starts) > 3
    assert row.disk["requests"] == sum(len(c) // 2 for c in calls)
    pages = sum(-(-lengths[i] // page) for i in mine)
    assert row.disk["blocks_fetched"] == pages == sum(sum(c[1::2]) for c in calls) // page
