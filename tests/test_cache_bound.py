"""The persistent compile cache is bounded: least recently used files go first."""

import os

from oscar_jax.runtime.cache import prune


def test_prune_deletes_least_recently_used_files_down_to_80_percent(tmp_path):
    (tmp_path / "exported").mkdir()
    paths = [tmp_path / f"entry{i}" for i in range(6)] + [tmp_path / "exported" / "prog"]
    for age, path in enumerate(paths):  # entry0 is the oldest, prog the newest
        path.write_bytes(b"x" * 100)
        t = 1_000_000 + 1000 * age
        os.utime(path, (t, t))
    assert prune(tmp_path, 10_000) == 0 and all(p.exists() for p in paths)  # under the bound: untouched
    removed = prune(tmp_path, 500)  # 700 bytes held: keep at most 400
    assert removed == 3
    assert [p.exists() for p in paths] == [False, False, False, True, True, True, True]
