"""workloads.iterhold: steady-window cells keep each epoch's tf.data iterator alive."""

import gc
import types
import weakref

from workloads import iterhold


class FakeIterator:
    def __iter__(self):
        return self

    def __next__(self):
        raise StopIteration


def fake_tf():
    class Dataset:
        def __iter__(self):
            return FakeIterator()

    return types.SimpleNamespace(data=types.SimpleNamespace(Dataset=Dataset))


def test_iterators_made_after_holding_outlive_their_epoch():
    tf = fake_tf()
    ds = tf.data.Dataset()
    before = weakref.ref(iter(ds))
    gc.collect()
    assert before() is None  # unheld: dropped at once, as Keras drops it per epoch
    iterhold.hold_tf_iterators(tf)
    count = iterhold.held()
    refs = [weakref.ref(iter(ds)) for _ in range(3)]
    gc.collect()
    assert all(r() is not None for r in refs)
    assert iterhold.held() == count + 3


def test_holding_twice_does_not_wrap_twice():
    tf = fake_tf()
    iterhold.hold_tf_iterators(tf)
    iterhold.hold_tf_iterators(tf)
    count = iterhold.held()
    iter(tf.data.Dataset())
    assert iterhold.held() == count + 1
