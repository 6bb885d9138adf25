"""Errors the worker answers with a status and a stable `code` (the TS `RemoteEngine` turns each code back into the
error class its `Engine` contract names)."""


class WorkerError(Exception):
    """Base: an HTTP status, a stable code and a message naming the object and what is wrong."""

    status = 500
    code = "internal"


class OutOfRange(WorkerError):
    """A prompt or row longer than the context, an empty sequence or a token id outside the vocabulary (TS RangeError)."""

    status = 400
    code = "out_of_range"


class CheckpointMissing(WorkerError):
    """Nothing at the checkpoint directory (TS CheckpointInvalid `missing`)."""

    status = 404
    code = "checkpoint_missing"


class CheckpointInvalid(WorkerError):
    """A checkpoint that cannot be loaded into this model (TS CheckpointInvalid `invalid`)."""

    status = 422
    code = "checkpoint_invalid"


class AdapterNotFound(WorkerError):
    """A request naming an adapter the worker does not hold."""

    status = 404
    code = "adapter_not_found"
