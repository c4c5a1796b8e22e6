# Runs abidiff against the committed baseline. libabigail only sets the
# "incompatible" bit (8) for a few cases (e.g. removed symbols); a changed
# struct layout or signature only sets "changed" (4). Our policy is stricter:
# any removed or changed function or variable fails; added ones pass and are
# reported so the baseline can be refreshed with `ninja abi-update`.
# SPDX-License-Identifier: Apache-2.0
set(suppr)
if(SUPPRESSIONS)
  set(suppr --suppressions ${SUPPRESSIONS})
endif()
execute_process(
  COMMAND ${ABIDIFF} ${suppr} --headers-dir2 ${HEADERS} ${BASELINE} ${LIB}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
math(EXPR bad "${rc} & 11")
math(EXPR changed "${rc} & 4")
if(bad)
  message(FATAL_ERROR "abidiff: incompatible ABI change or tool error (exit ${rc})")
endif()
if(changed)
  if(out MATCHES "[1-9][0-9]* Removed" OR out MATCHES "[1-9][0-9]* Changed")
    message(FATAL_ERROR "abidiff: existing ABI removed or changed against "
            "${BASELINE}; this breaks applications built against it")
  endif()
  message("abidiff: compatible additions only; run `ninja abi-update` to "
          "record them in abi/")
else()
  message("abidiff: no ABI change")
endif()
