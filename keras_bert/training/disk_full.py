"""Recognising a full disk among the errors of the libraries that write."""

import errno


def is_disk_full(error):
    """Whether `error` means the disk (or quota) is full. h5py, TensorFlow
    and plain `open` report it as different types, all with the system's
    message, so both the errno and the message are checked."""
    return (getattr(error, "errno", None) in (errno.ENOSPC, errno.EDQUOT)
            or "No space left on device" in str(error)
            or "Disk quota exceeded" in str(error))
