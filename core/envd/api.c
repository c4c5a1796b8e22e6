/* envd: POST /init, GET /envs, GET /metrics. SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "api.h"
#include "proto/pjson.h"
#include "state.h"
#include "util/util.h"

/* RFC 3339 → ns since the epoch. 0 or -1. */
static int parse_rfc3339(const char *s, int64_t *ns) {
  int Y, M, D, h, m, sec, n = 0;
  if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &Y, &M, &D, &h, &m, &sec, &n) != 6) return -1;
  const char *p = s + n;
  int64_t frac = 0;
  if (*p == '.') {
    int digits = 0;
    p++;
    while (*p >= '0' && *p <= '9') {
      if (digits < 9) {
        frac = frac * 10 + (*p - '0');
        digits++;
      }
      p++;
    }
    while (digits++ < 9) frac *= 10;
  }
  int off = 0;
  if (*p == 'Z' || *p == 'z') {
    p++;
  } else if (*p == '+' || *p == '-') {
    int oh, om;
    if (sscanf(p + 1, "%2d:%2d", &oh, &om) != 2) return -1;
    off = (oh * 60 + om) * 60 * (*p == '-' ? -1 : 1);
    p += 6;
  } else {
    return -1;
  }
  if (*p) return -1;
  struct tm tm;
  memset(&tm, 0, sizeof tm);
  tm.tm_year = Y - 1900;
  tm.tm_mon = M - 1;
  tm.tm_mday = D;
  tm.tm_hour = h;
  tm.tm_min = m;
  tm.tm_sec = sec;
  *ns = ((int64_t)timegm(&tm) - off) * 1000000000 + frac;
  return 0;
}

static struct MHD_Response *init_reply(unsigned status, const char *text) {
  struct MHD_Response *r =
      text ? envd_resp_buf("text/plain; charset=utf-8", text, strlen(text)) : envd_resp_empty();
  if (r) {
    MHD_add_response_header(r, "X-Envd-Version", ENVD_E2B_VERSION);
    MHD_add_response_header(r, "Cache-Control", "no-store");
  }
  (void)status;
  return r;
}

static struct MHD_Response *init_done(envd_hreq *r, unsigned *status) {
  if (r->body.too_big) {
    *status = 400;
    return init_reply(400, "request body too large");
  }
  cJSON *req = NULL;
  if (r->body.buf.len) {
    req = asbi_pj_parse(r->body.buf.data, r->body.buf.len, NULL);
    if (!req || !cJSON_IsObject(req)) {
      cJSON_Delete(req);
      *status = 400;
      return init_reply(400, NULL);
    }
  }
  const cJSON *tok = asbi_pj_field(req, "accessToken");
  const cJSON *envs = asbi_pj_field(req, "envVars");
  const cJSON *du = asbi_pj_field(req, "defaultUser");
  const cJSON *dw = asbi_pj_field(req, "defaultWorkdir");
  const cJSON *ts = asbi_pj_field(req, "timestamp");
  if ((tok && !cJSON_IsString(tok)) || (envs && !cJSON_IsObject(envs)) ||
      (du && !cJSON_IsString(du)) || (dw && !cJSON_IsString(dw)) || (ts && !cJSON_IsString(ts))) {
    cJSON_Delete(req);
    *status = 400;
    return init_reply(400, NULL);
  }
  const cJSON *it;
  cJSON_ArrayForEach(it, envs) {
    if (!cJSON_IsString(it)) {
      cJSON_Delete(req);
      *status = 400;
      return init_reply(400, NULL);
    }
  }
  int64_t tsns = 0;
  if (ts && parse_rfc3339(ts->valuestring, &tsns) != 0) {
    cJSON_Delete(req);
    *status = 400;
    return init_reply(400, NULL);
  }
  envd_init in = {tok ? tok->valuestring : NULL,
                  envd_hdr(r, "X-Access-Token"),
                  du ? du->valuestring : NULL,
                  dw ? dw->valuestring : NULL,
                  envs,
                  ts != NULL,
                  tsns};
  int rc = envd_state_init(&in);
  if (rc < 0) {
    cJSON_Delete(req);
    *status = 401;
    return init_reply(401, rc == ENVD_INIT_BAD_TOKEN ? "access token validation failed"
                                                     : "access token reset not authorized");
  }
  cJSON_Delete(req);
  *status = 204;
  return init_reply(204, NULL);
}

struct MHD_Response *envd_api_init(envd_hreq *r, unsigned *status) {
  (void)status;
  asbi_httpd_body_init(&r->body, g_envd.max_body);
  r->on_body = envd_body_append;
  r->on_done = init_done;
  return NULL;
}

struct MHD_Response *envd_api_envs(envd_hreq *r, unsigned *status) {
  (void)r;
  cJSON *o = envd_env_json();
  char *j = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  asbi_buf b = ASBI_BUF_INIT;
  asbi_buf_printf(&b, "%s\n", j ? j : "{}");
  free(j);
  *status = 200;
  struct MHD_Response *resp = envd_resp_buf("application/json", b.data, b.len);
  asbi_buf_free(&b);
  if (resp) MHD_add_response_header(resp, "Cache-Control", "no-store");
  return resp;
}

/* cpu_used_pct over the interval since the previous call (gopsutil's
 * cpu.Percent(0)). */
static struct {
  pthread_mutex_t lock;
  unsigned long long total, busy; /* /proc/stat at the previous call */
} g_cpu = {PTHREAD_MUTEX_INITIALIZER, 0, 0};

static double cpu_pct(void) {
  FILE *f = fopen("/proc/stat", "re");
  if (!f) return 0;
  unsigned long long v[10] = {0};
  int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                 &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]);
  fclose(f);
  if (n < 4) return 0;
  unsigned long long total = 0;
  for (int i = 0; i < 8; i++) total += v[i];
  unsigned long long busy = total - v[3] - v[4];
  pthread_mutex_lock(&g_cpu.lock);
  double pct = 0;
  if (g_cpu.total && total > g_cpu.total)
    pct = 100.0 * (double)(busy - g_cpu.busy) / (double)(total - g_cpu.total);
  g_cpu.total = total;
  g_cpu.busy = busy;
  pthread_mutex_unlock(&g_cpu.lock);
  if (pct < 0) pct = 0;
  if (pct > 100) pct = 100;
  return (double)(long long)(pct * 100 + 0.5) / 100;
}

struct MHD_Response *envd_api_metrics(envd_hreq *r, unsigned *status) {
  (void)r;
  unsigned long long total = 0, avail = 0, cached = 0, val;
  char key[64];
  FILE *f = fopen("/proc/meminfo", "re");
  if (f) {
    while (fscanf(f, "%63s %llu kB\n", key, &val) == 2) {
      if (strcmp(key, "MemTotal:") == 0)
        total = val * 1024;
      else if (strcmp(key, "MemAvailable:") == 0)
        avail = val * 1024;
      else if (strcmp(key, "Cached:") == 0)
        cached = val * 1024;
    }
    fclose(f);
  }
  unsigned long long used = total > avail ? total - avail : 0;
  struct statvfs sv;
  unsigned long long dt = 0, du = 0;
  if (statvfs("/", &sv) == 0) {
    dt = (unsigned long long)sv.f_blocks * sv.f_frsize;
    du = dt - (unsigned long long)sv.f_bavail * sv.f_frsize;
  }
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  asbi_buf b = ASBI_BUF_INIT;
  asbi_buf_printf(&b,
                  "{\"ts\":%lld,\"cpu_count\":%ld,\"cpu_used_pct\":%.2f,"
                  "\"mem_total_mib\":%llu,\"mem_used_mib\":%llu,"
                  "\"mem_total\":%llu,\"mem_used\":%llu,\"mem_cache\":%llu,"
                  "\"disk_used\":%llu,\"disk_total\":%llu}\n",
                  (long long)time(NULL), ncpu, cpu_pct(), total >> 20, used >> 20, total, used,
                  cached, du, dt);
  *status = 200;
  struct MHD_Response *resp = envd_resp_buf("application/json", b.data, b.len);
  asbi_buf_free(&b);
  if (resp) MHD_add_response_header(resp, "Cache-Control", "no-store");
  return resp;
}
