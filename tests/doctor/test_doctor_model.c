/* test_doctor_model.c: the pieces of hvrun's doctor (tools/hvrun/doctor_*.c) below the
 * command line: ranks as compact ranges, and the loader on documents given as text
 * (what a status socket answers): a good one, then one fault each, with the line it
 * must give. The verdicts themselves are tested on fixture directories
 * (analyze_fixtures.sh). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "doctor.h"
#include "hvrun.h"

/* doctor_verdict.c reports through hvrun's one error path; not reached here. */
void hvrun_die(const hvrun_task_t *task, int code, const char *fmt, ...) {
  (void)task;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  exit(code);
}

static void ranks(const int *r, int n, const char *want) {
  char out[256];
  doctor_ranks_text(r, n, out, sizeof out);
  CHECK(strcmp(out, want) == 0, "ranks text: got '%s', want '%s'", out, want);
}

#define GOOD \
    "{\"format\":\"hv-flight-recorder\",\"version\":1,\"hv_version\":\"0.1.0\",\"job\":\"j\",\"world_rank\":%d," \
    "\"world_size\":2,\"host\":\"h\",\"pid\":7,\"reason\":\"status\",\"reason_detail\":\"\",\"time\":100.5," \
    "\"comms\":[{\"index\":0,\"rank\":%d,\"size\":2,\"recorder_size\":4,\"phase\":\"%s\",\"since\":99.0," \
    "\"pending\":[],\"waiting\":\"\",\"waiting_peer\":-1,\"error\":\"\",\"submitted\":1,\"completed\":1," \
    "\"last_completed\":null,\"coordinator\":null,\"events\":[{\"seq\":0,\"name\":\"a\",\"coll\":\"allreduce\"," \
    "\"dtype\":\"float32\",\"count\":%s,\"bytes\":4,\"algo\":\"ring\",\"ordered\":false,\"device\":-1," \
    "\"stream\":\"0x0\",\"t_submit\":99.0,\"t_negotiated\":null,\"t_started\":99.1,\"t_finished\":99.2," \
    "\"state\":\"done\",\"error\":\"\",\"unknown_field\":[1,2]}]}]}"

/* Loads documents of ranks 0 and 1 (rank 1's with the given phase and count); returns
 * the loader's status, its message in err. */
static int load_pair(const char *phase, const char *count, char *err, size_t errlen, doctor_model_t *m) {
  char text[4096];
  doctor_model_init(m);
  snprintf(text, sizeof text, GOOD, 0, 0, "user", "1");
  if (doctor_load_doc(m, text, strlen(text), "doc0", err, errlen) != 0) return -1;
  snprintf(text, sizeof text, GOOD, 1, 1, phase, count);
  return doctor_load_doc(m, text, strlen(text), "doc1", err, errlen);
}

int main(void) {
  ranks((int[]){0, 1, 2, 3}, 4, "0-3");
  ranks((int[]){3, 0, 2}, 3, "0,2-3");
  ranks((int[]){5, 5, 1}, 3, "1,5");
  ranks((int[]){7}, 1, "7");
  ranks((int[]){0, 2, 4, 5, 6, 9}, 6, "0,2,4-6,9");
  ranks(NULL, 0, "");

  char err[1024] = "";
  doctor_model_t m;
  CHECK(load_pair("negotiating", "1", err, sizeof err, &m) == 0, "good documents refused: %s", err);
  CHECK(m.world_size == 2 && m.ndocs == 2 && m.ranks[1].present, "model: size %d, %d documents", m.world_size, m.ndocs);
  if (m.ranks[1].present) {
    const doctor_comm_t *c = &m.ranks[1].comms[0];
    CHECK(!strcmp(c->phase, "negotiating") && c->nevents == 1 && c->events[0].t_finished == 99.2 &&
              c->events[0].t_negotiated != c->events[0].t_negotiated /* NAN for null */,
          "comm read wrong: phase %s, %d events", c->phase, c->nevents);
  }
  doctor_model_free(&m);

  CHECK(load_pair("asleep", "1", err, sizeof err, &m) != 0 && strstr(err, "doc1: field 'comms[0].phase' is 'asleep'"),
        "bad phase: '%s'", err);
  doctor_model_free(&m);
  CHECK(load_pair("user", "1.5", err, sizeof err, &m) != 0 &&
            strstr(err, "doc1: field 'comms[0].events[0].count' is a number, expected a whole number"),
        "fractional count: '%s'", err);
  doctor_model_free(&m);
  CHECK(load_pair("user", "null", err, sizeof err, &m) != 0 &&
            strstr(err, "doc1: field 'comms[0].events[0].count' is null, expected a whole number"),
        "null count: '%s'", err);
  doctor_model_free(&m);

  /* a raw probe line (from another node) fills a rank without a document */
  doctor_model_init(&m);
  const char *probe = "{\"format\":\"hv-status-probe\",\"world_rank\":3,\"state\":\"stopped\",\"detail\":\"state T\","
                      "\"host\":\"n1\",\"pid\":42}";
  CHECK(doctor_load_raw_line(&m, probe, strlen(probe), "line 1", err, sizeof err) == 0, "probe refused: %s", err);
  CHECK(m.world_size == 4 && m.ranks[3].proc == DOCTOR_PROC_STOPPED && !strcmp(m.ranks[3].probe_host, "n1"),
        "probe not recorded: size %d", m.world_size);
  doctor_model_free(&m);
  printf("test_doctor_model: %d checks, %d failed\n", check_count, check_failures);
  return check_failures ? 1 : 0;
}
