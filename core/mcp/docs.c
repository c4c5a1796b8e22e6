/* The tool reference in Markdown, made from tools.json (what tools/list
 * sends), so docs/mcp.md cannot drift from the schemas: the ctest
 * mcp.docs compares that page's generated section with this output.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp.h"

static void cell(asbi_buf *b, const char *s) {
  for (; s && *s; s++) {
    if (*s == '|')
      asbi_buf_puts(b, "\\|");
    else if (*s == '\n')
      asbi_buf_putc(b, ' ');
    else
      asbi_buf_putc(b, *s);
  }
}

static const char *str(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* "integer, 1 to 86400", "one of all, running, paused", "object of strings"... */
static void type_text(asbi_buf *b, const cJSON *s) {
  const char *t = str(s, "type");
  const cJSON *en = cJSON_GetObjectItemCaseSensitive(s, "enum");
  if (cJSON_IsArray(en)) {
    asbi_buf_puts(b, "one of ");
    const cJSON *it;
    int first = 1;
    cJSON_ArrayForEach(it, en) {
      asbi_buf_printf(b, "%s`%s`", first ? "" : ", ", cJSON_IsString(it) ? it->valuestring : "?");
      first = 0;
    }
    return;
  }
  if (!t) {
    asbi_buf_puts(b, "any JSON");
    return;
  }
  if (!strcmp(t, "array")) {
    const char *it = str(cJSON_GetObjectItemCaseSensitive(s, "items"), "type");
    asbi_buf_printf(b, "array of %ss", it ? it : "value");
    return;
  }
  if (!strcmp(t, "object")) {
    const cJSON *ap = cJSON_GetObjectItemCaseSensitive(s, "additionalProperties");
    const char *at = cJSON_IsObject(ap) ? str(ap, "type") : NULL;
    if (at)
      asbi_buf_printf(b, "object of %ss", at);
    else
      asbi_buf_puts(b, "object");
    return;
  }
  asbi_buf_puts(b, t);
  const cJSON *mn = cJSON_GetObjectItemCaseSensitive(s, "minimum");
  const cJSON *mx = cJSON_GetObjectItemCaseSensitive(s, "maximum");
  if (cJSON_IsNumber(mn) && cJSON_IsNumber(mx))
    asbi_buf_printf(b, ", %g to %g", mn->valuedouble, mx->valuedouble);
  else if (cJSON_IsNumber(mn))
    asbi_buf_printf(b, ", at least %g", mn->valuedouble);
}

static int required(const cJSON *schema, const char *name) {
  const cJSON *it;
  cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(schema, "required")) {
    if (cJSON_IsString(it) && !strcmp(it->valuestring, name)) return 1;
  }
  return 0;
}

static void inputs(asbi_buf *b, const cJSON *schema) {
  const cJSON *props = cJSON_GetObjectItemCaseSensitive(schema, "properties");
  if (!cJSON_GetArraySize(props)) {
    asbi_buf_puts(b, "Arguments: none.\n\n");
    return;
  }
  asbi_buf_puts(b, "| argument | type | default | description |\n|---|---|---|---|\n");
  const cJSON *p;
  cJSON_ArrayForEach(p, props) {
    asbi_buf_printf(b, "| `%s`%s | ", p->string, required(schema, p->string) ? " (required)" : "");
    type_text(b, p);
    asbi_buf_puts(b, " | ");
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(p, "default");
    if (d) {
      char *t = cJSON_PrintUnformatted(d);
      asbi_buf_printf(b, "`%s`", t ? t : "");
      free(t);
    }
    asbi_buf_puts(b, " | ");
    cell(b, str(p, "description"));
    asbi_buf_puts(b, " |\n");
  }
  asbi_buf_puts(b, "\n");
}

static void outputs_rows(asbi_buf *b, const cJSON *schema, const char *prefix, int depth) {
  const cJSON *p;
  cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(schema, "properties")) {
    asbi_buf_printf(b, "| `%s%s` | ", prefix, p->string);
    type_text(b, p);
    asbi_buf_puts(b, required(schema, p->string) ? " | always | " : " | | ");
    cell(b, str(p, "description"));
    asbi_buf_puts(b, " |\n");
    if (depth >= 3) continue;
    const char *t = str(p, "type");
    char sub[128];
    if (t && !strcmp(t, "array")) {
      const cJSON *items = cJSON_GetObjectItemCaseSensitive(p, "items");
      if (cJSON_GetObjectItemCaseSensitive(items, "properties")) {
        snprintf(sub, sizeof sub, "%s%s[].", prefix, p->string);
        outputs_rows(b, items, sub, depth + 1);
      }
    } else if (t && !strcmp(t, "object") && cJSON_GetObjectItemCaseSensitive(p, "properties")) {
      snprintf(sub, sizeof sub, "%s%s.", prefix, p->string);
      outputs_rows(b, p, sub, depth + 1);
    }
  }
}

char *mcp_tools_markdown(const cJSON *tools) {
  asbi_buf b = ASBI_BUF_INIT;
  asbi_buf_puts(&b, "| tool | what it does |\n|---|---|\n");
  const cJSON *t;
  cJSON_ArrayForEach(t, tools) {
    asbi_buf_printf(&b, "| [`%s`](#%s) | ", str(t, "name"), str(t, "name"));
    cell(&b, str(t, "title"));
    asbi_buf_puts(&b, " |\n");
  }
  asbi_buf_puts(&b, "\n");
  cJSON_ArrayForEach(t, tools) {
    const cJSON *ann = cJSON_GetObjectItemCaseSensitive(t, "annotations");
    asbi_buf_printf(&b, "### %s\n\n**%s.** %s\n\n", str(t, "name"), str(t, "title"),
                    str(t, "description"));
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ann, "readOnlyHint")))
      asbi_buf_puts(&b, "Read-only.\n\n");
    else if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ann, "destructiveHint")))
      asbi_buf_puts(&b, "May change or delete things (destructiveHint).\n\n");
    inputs(&b, cJSON_GetObjectItemCaseSensitive(t, "inputSchema"));
    const cJSON *out = cJSON_GetObjectItemCaseSensitive(t, "outputSchema");
    if (out) {
      asbi_buf_puts(&b,
                    "Result (`structuredContent`, and the same JSON as text):\n\n"
                    "| field | type | present | description |\n|---|---|---|---|\n");
      outputs_rows(&b, out, "", 1);
      asbi_buf_puts(&b, "\n");
    } else {
      asbi_buf_puts(&b, "Result: content blocks only (see the description).\n\n");
    }
  }
  return asbi_buf_detach(&b, NULL);
}
