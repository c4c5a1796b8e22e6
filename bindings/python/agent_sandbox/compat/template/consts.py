"""``e2b.template.consts``: the builder's defaults, with E2B's names.
SPDX-License-Identifier: Apache-2.0"""

BASE_STEP_NAME = "base"  # reason.step of a failure in the base (E2B's name)
FINALIZE_STEP_NAME = "finalize"  # reason.step of a failure after the last step
RESOLVE_SYMLINKS = False  # copy() keeps symlinks as links unless told otherwise
GZIP = True  # accepted for E2B's signature; our library uploads a plain tar
FILE_UPLOAD_TIMEOUT_SECONDS = 3600  # E2B's default bound of one upload
