"""Running a function from several threads at once, for thread-safety tests."""

import threading


def run_in_threads(fn, count=4):
    """Calls `fn(i)` for `i` in `range(count)`, each in its own thread.

    Returns the results in order; raises an `AssertionError` listing every
    exception a thread raised.
    """
    results, errors = [None] * count, []

    def work(i):
        try:
            results[i] = fn(i)
        except Exception as error:  # noqa: BLE001 - asserted below
            errors.append(repr(error))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    return results
