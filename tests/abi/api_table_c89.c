/* bindings/gen/api_table.h, generated from abi/api.json, compiles as strict
 * C89 next to both libraries' headers, and every function, handle and
 * options struct it names exists: each function's address is taken (the
 * link fails for one neither library exports), each options struct is
 * initialised through its init function, and the ready-made tables have as
 * many rows as the X-macro lists. SPDX-License-Identifier: Apache-2.0 */
#include <agentsandbox.h>
#include <agentsandbox/server.h>
#include <stdio.h>
#include <string.h>

#define ASB_API_TABLE_IMPLEMENTATION
#include "gen/api_table.h"

typedef void (*any_fn)(void);

#define ADDR(name, flags, nparams, nout, cancel, thread) (any_fn) name,
static const any_fn addresses[] = {ASB_API_FUNCTIONS(ADDR) 0};

#define HANDLE_SIZE(type, free_fn, owner) (int)sizeof(type *),
static const int handle_sizes[] = {ASB_API_HANDLES(HANDLE_SIZE) 0};

#define INIT(type, vers, init_fn)                           \
  {                                                         \
    type o;                                                 \
    memset(&o, 0, sizeof o);                                \
    if (init_fn(&o, vers) != ASB_OK || o.version != vers) { \
      fprintf(stderr, "%s: init failed\n", #type);          \
      bad++;                                                \
    }                                                       \
  }

int main(void) {
  int bad = 0;
  size_t n = sizeof addresses / sizeof addresses[0] - 1;
  size_t rows = sizeof asb_api_functions / sizeof asb_api_functions[0] - 1;
  size_t outs = sizeof asb_api_outputs / sizeof asb_api_outputs[0] - 1;
  size_t i;
  ASB_API_OPTIONS(INIT)
  for (i = 0; i < n; i++)
    if (!addresses[i]) bad++;
  if (n != ASB_API_FUNCTION_COUNT || rows != n || outs != ASB_API_OUTPUT_COUNT) {
    fprintf(stderr, "counts: %lu addresses, %lu rows, %lu outputs\n", (unsigned long)n,
            (unsigned long)rows, (unsigned long)outs);
    bad++;
  }
  for (i = 0; i < rows; i++)
    if (asb_api_functions[i].nout > asb_api_functions[i].nparams) bad++;
  (void)handle_sizes;
  printf("%lu functions, %lu outputs\n", (unsigned long)n, (unsigned long)outs);
  return bad ? 1 : 0;
}
