"""What `keras_bert.finetune`, `.evaluate` and `.predict` do with what
their run returns or raises."""

import json
import os
import sys

from keras_bert.runtime.console import configure_logging


def report(run, output):
    """Calls `run()`, prints its result as JSON and returns 0; bad input is
    one `error:` line (2); a full disk while writing into `output` one line
    (1)."""
    configure_logging("%(asctime)s %(name)s: %(message)s")
    from pipelines.errors import PipelineInputError

    from keras_bert.conversion import CheckpointError
    from keras_bert.errors import FinetuneConfigError
    from keras_bert.errors import FinetuneError
    from keras_bert.file_io import is_disk_full

    try:
        result = run()
    except (FinetuneError, FinetuneConfigError, PipelineInputError, CheckpointError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except Exception as error:
        if not is_disk_full(error):
            raise
        print(f"error: no space left on device in {output}: free space and "
              "run the same command again (it replaces what this run "
              "wrote; nothing is left half-written).", file=sys.stderr)
        # At once: h5py's handles on a failed file crash interpreter
        # shutdown.
        sys.stderr.flush()
        os._exit(1)
    print(json.dumps(result, indent=2, sort_keys=True))
    return 0
