"""The order of a run (conftest's ``run_group``): calm tests first, then the ``late`` ones, then the
``disruptive`` ones, and ``disruptive(last=True)`` at the very end, whatever their files are called."""

from conftest import run_group


def test_the_groups_run_in_order(request):
    items = request.session.items
    groups = [run_group(item) for item in items]
    assert groups == sorted(groups), [(item.nodeid, group) for item, group in zip(items, groups)]


def test_the_marked_modules_are_in_their_groups(request):
    expected = {"test_fuzz": 1, "test_faults": 2, "test_hash_process": 2, "test_hash_queue": 2,
                "test_key_rotation": 2, "test_smtp_tls": 2, "test_restart": 3, "test_run_order": 0}
    for item in request.session.items:
        module = item.module.__name__
        if module in expected:
            assert run_group(item) == expected[module], item.nodeid
