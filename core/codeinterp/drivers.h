/* Built-in driver programs (see drivers.c). Internal.
 * SPDX-License-Identifier: Apache-2.0 */
#ifndef ASB_CODEINTERP_DRIVERS_H
#define ASB_CODEINTERP_DRIVERS_H

extern const char ci_node_driver[];
extern const char ci_bash_init[];

#endif
