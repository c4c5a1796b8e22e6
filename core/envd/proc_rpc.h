/* envd: the method table of process.Process (Start and Connect from proc.c,
 * the unary methods and StreamInput from proc_rpc.c). Internal.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_ENVD_PROC_RPC_H
#define ASB_ENVD_PROC_RPC_H

#include "rpc.h"

extern const envd_method envd_process_methods[];

#endif
