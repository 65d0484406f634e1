/*
 * The storage floor: what bare SQLite does for the row writes of one accepted submission, with
 * no HTTP, no JSON, no threads. Per submission, exactly what surveyd's writer does in its
 * transaction for POST /responses:
 *   SELECT expires_at FROM orgs WHERE org_id = ?            (the gate's subscription check)
 *   SELECT ... FROM responses WHERE org_id = ? AND client_submission_id = ?   (the gate's replay re-check)
 *   INSERT INTO responses (... the canonical answers, the SHA-256 of the body as sent ...)
 *   INSERT INTO audit (...)
 * on the same schema (dumped from a database surveyd created), WAL, synchronous=FULL,
 * foreign_keys=ON, with time-ordered rsp_<uuidv7> ids like Sources/SurveyDomain/Ids.swift.
 *
 * Modes: one transaction per submission (BEGIN IMMEDIATE ... COMMIT), then groups of G
 * submissions per COMMIT for each G given; each mode runs for --seconds. With --savepoints every
 * submission inside a group is also wrapped in SAVEPOINT/RELEASE as surveyd's writer does.
 *
 *   floor --db F --schema schema.sql --answers answers.json [--seconds 4] [--prefill 10000]
 *         [--groups 1,8,32,128] [--savepoints] [--sync FULL] [--pragma "PRAGMA x=y"] [--page-size 4096]
 * prints one line per mode:  floor group=G savepoints=0|1 submissions=N seconds=S rate=R
 * Build: gcc -O2 -o floor floor.c -lsqlite3
 */
#define _GNU_SOURCE
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>

static sqlite3 *db;

static void die(const char *what) {
    fprintf(stderr, "floor: %s: %s\n", what, db ? sqlite3_errmsg(db) : "?");
    exit(1);
}

static void exec(const char *sql) {
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
        fprintf(stderr, "floor: %s: %s\n", sql, err ? err : "?");
        exit(1);
    }
}

static sqlite3_stmt *prep(const char *sql) {
    sqlite3_stmt *s;
    if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, NULL) != SQLITE_OK) die(sql);
    return s;
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(1); }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc(n + 1);
    if (fread(buf, 1, n, f) != (size_t)n) { perror(path); exit(1); }
    buf[n] = 0;
    fclose(f);
    if (len) *len = n;
    return buf;
}

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static double mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int urandom = -1;

/* prefix_<uuidv7>, as Ids.make: 48-bit ms timestamp, version 7, variant 10, random rest. */
static void make_id(char *out, const char *prefix, int64_t ms) {
    unsigned char b[16];
    if (read(urandom, b, 16) != 16) { perror("urandom"); exit(1); }
    for (int i = 0; i < 6; i++) b[i] = (unsigned char)((uint64_t)ms >> (8 * (5 - i)));
    b[6] = (b[6] & 0x0F) | 0x70;
    b[8] = (b[8] & 0x3F) | 0x80;
    char h[33];
    for (int i = 0; i < 16; i++) sprintf(h + 2 * i, "%02x", b[i]);
    sprintf(out, "%s_%.8s-%.4s-%.4s-%.4s-%.12s", prefix, h, h + 8, h + 12, h + 16, h + 20);
}

static const char *ORG = "org_floor-0000-7000-8000-000000000001";
static const char *SURVEY = "srv_floor-0000-7000-8000-000000000001";
static const char *VERSION = "svv_floor-0000-7000-8000-000000000001";
static const char *USER = "usr_floor-0000-7000-8000-000000000001";

static sqlite3_stmt *s_org, *s_replay, *s_resp, *s_audit;
static char *answers;
static size_t answers_len;
static long serial;

static void step_done(sqlite3_stmt *s, const char *what) {
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {}
    if (rc != SQLITE_DONE) die(what);
    sqlite3_reset(s);
}

/* The row writes of one accepted submission. */
static void submission(int64_t ms) {
    char csid[64], rid[64], digest[80], body[4096], detail[160];
    unsigned char body_sha256[32];
    snprintf(csid, sizeof csid, "floor-%ld-%ld", (long)getpid(), ++serial);
    make_id(rid, "rsp", ms);
    snprintf(digest, sizeof digest, "sha256:%064lx", serial);
    int n = snprintf(body, sizeof body,
                     "{\"answers\":%s,\"capturedAt\":\"2025-06-01T08:00:00Z\",\"clientSubmissionId\":\"%s\","
                     "\"contentHash\":\"sha256:%064x\",\"surveyVersionId\":\"%s\"}",
                     answers, csid, 0, VERSION);
    (void)n;
    /* The server stores the SHA-256 of the body as sent; its value does not matter to the cost. */
    for (int i = 0; i < 32; i++) body_sha256[i] = (unsigned char)(body[i % n] ^ (serial >> (i % 8)));
    snprintf(detail, sizeof detail, "{\"clientSubmissionId\":\"%s\",\"toState\":\"submitted\"}", csid);

    sqlite3_bind_text(s_org, 1, ORG, -1, SQLITE_STATIC);
    int rc = sqlite3_step(s_org);
    if (rc != SQLITE_ROW || sqlite3_column_int64(s_org, 0) <= ms) die("subscription");
    sqlite3_reset(s_org);

    sqlite3_bind_text(s_replay, 1, ORG, -1, SQLITE_STATIC);
    sqlite3_bind_text(s_replay, 2, csid, -1, SQLITE_STATIC);
    step_done(s_replay, "replay check");

    sqlite3_bind_text(s_resp, 1, rid, -1, SQLITE_STATIC);
    sqlite3_bind_text(s_resp, 2, ORG, -1, SQLITE_STATIC);
    sqlite3_bind_text(s_resp, 3, csid, -1, SQLITE_STATIC);
    sqlite3_bind_text(s_resp, 4, USER, -1, SQLITE_STATIC);
    sqlite3_bind_text(s_resp, 5, SURVEY, -1, SQLITE_STATIC);
    sqlite3_bind_text(s_resp, 6, VERSION, -1, SQLITE_STATIC);
    sqlite3_bind_text(s_resp, 7, digest, -1, SQLITE_STATIC);
    sqlite3_bind_blob(s_resp, 8, body_sha256, 32, SQLITE_STATIC);
    sqlite3_bind_text(s_resp, 9, answers, (int)answers_len, SQLITE_STATIC);
    sqlite3_bind_null(s_resp, 10);
    sqlite3_bind_int64(s_resp, 11, ms - 3600 * 1000);
    sqlite3_bind_int64(s_resp, 12, ms);
    sqlite3_bind_text(s_resp, 13, "submitted", -1, SQLITE_STATIC);
    sqlite3_bind_int64(s_resp, 14, 1);
    step_done(s_resp, "insert response");

    sqlite3_bind_text(s_audit, 1, ORG, -1, SQLITE_STATIC);
    sqlite3_bind_text(s_audit, 2, USER, -1, SQLITE_STATIC);
    sqlite3_bind_text(s_audit, 3, "response.accept", -1, SQLITE_STATIC);
    sqlite3_bind_text(s_audit, 4, "response", -1, SQLITE_STATIC);
    sqlite3_bind_text(s_audit, 5, rid, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s_audit, 6, 1);
    sqlite3_bind_text(s_audit, 7, detail, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s_audit, 8, ms);
    step_done(s_audit, "insert audit");
}

int main(int argc, char **argv) {
    const char *path = NULL, *schema = NULL, *answers_path = NULL, *groups = "1,8,32,128", *sync = "FULL";
    double seconds = 4;
    long prefill = 0;
    int savepoints = 0;
    const char *extra = NULL;
    int page_size = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--db") && v) path = v, i++;
        else if (!strcmp(a, "--schema") && v) schema = v, i++;
        else if (!strcmp(a, "--answers") && v) answers_path = v, i++;
        else if (!strcmp(a, "--seconds") && v) seconds = atof(v), i++;
        else if (!strcmp(a, "--prefill") && v) prefill = atol(v), i++;
        else if (!strcmp(a, "--groups") && v) groups = v, i++;
        else if (!strcmp(a, "--sync") && v) sync = v, i++;
        else if (!strcmp(a, "--pragma") && v) extra = v, i++;
        else if (!strcmp(a, "--page-size") && v) page_size = atoi(v), i++;
        else if (!strcmp(a, "--savepoints")) savepoints = 1;
        else { fprintf(stderr, "usage: floor --db F --schema S --answers A [--seconds 4] [--prefill N] [--groups 1,8,32,128] [--savepoints] [--sync FULL] [--pragma SQL] [--page-size N]\n"); return 2; }
    }
    if (!path || !schema || !answers_path) { fprintf(stderr, "floor: --db, --schema and --answers are required\n"); return 2; }
    urandom = open("/dev/urandom", O_RDONLY);
    answers = slurp(answers_path, &answers_len);
    while (answers_len && (answers[answers_len - 1] == '\n')) answers[--answers_len] = 0;

    unlink(path);
    char side[4096];
    snprintf(side, sizeof side, "%s-wal", path); unlink(side);
    snprintf(side, sizeof side, "%s-shm", path); unlink(side);
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) die("open");
    sqlite3_busy_timeout(db, 5000);
    char pragma[128];
    if (page_size) {  /* before WAL: a new file's page size is fixed by its first write */
        snprintf(pragma, sizeof pragma, "PRAGMA page_size=%d", page_size);
        exec(pragma);
    }
    exec("PRAGMA journal_mode=WAL");
    snprintf(pragma, sizeof pragma, "PRAGMA synchronous=%s; PRAGMA foreign_keys=ON;", sync);
    exec(pragma);
    if (extra) exec(extra);
    exec("BEGIN IMMEDIATE");
    exec(slurp(schema, NULL));
    int64_t t0 = now_ms();
    char sql[1024];
    snprintf(sql, sizeof sql, "INSERT INTO orgs(org_id, name, expires_at, created_at) VALUES ('%s', 'Floor', %lld, %lld)", ORG, (long long)(t0 + 86400000LL * 365), (long long)t0);
    exec(sql);
    snprintf(sql, sizeof sql, "INSERT INTO users(user_id, org_id, name, roles, active, created_at) VALUES ('%s', '%s', 'Floor', 'collector', 1, %lld)", USER, ORG, (long long)t0);
    exec(sql);
    snprintf(sql, sizeof sql, "INSERT INTO surveys(survey_id, org_id, title, review_required, created_by, created_at) VALUES ('%s', '%s', 'Floor', 1, '%s', %lld)", SURVEY, ORG, USER, (long long)t0);
    exec(sql);
    snprintf(sql, sizeof sql, "INSERT INTO survey_versions(survey_version_id, survey_id, org_id, number, content_hash, definition, created_at) VALUES ('%s', '%s', '%s', 1, 'sha256:0', '{}', %lld)", VERSION, SURVEY, ORG, (long long)t0);
    exec(sql);
    exec("COMMIT");

    s_org = prep("SELECT expires_at FROM orgs WHERE org_id = ?");
    s_replay = prep("SELECT response_id, org_id, client_submission_id, submitter, survey_id, survey_version_id, request_digest, "
                    "request_body, answers, field_task_id, captured_at, received_at, review_state, revision, request_sha256 "
                    "FROM responses WHERE org_id = ? AND client_submission_id = ?");
    s_resp = prep("INSERT INTO responses(response_id, org_id, client_submission_id, submitter, survey_id, survey_version_id, "
                  "request_digest, request_body, request_sha256, answers, field_task_id, captured_at, received_at, review_state, revision) "
                  "VALUES (?, ?, ?, ?, ?, ?, ?, X'', ?, ?, ?, ?, ?, ?, ?)");
    s_audit = prep("INSERT INTO audit(org_id, actor, action, target_type, target_id, revision, detail, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");

    if (prefill > 0) {
        /* Rows already stored before measuring (time-ordered ids in the past), in one transaction. */
        exec("BEGIN IMMEDIATE");
        int64_t start = t0 - prefill * 50;
        for (long i = 0; i < prefill; i++) submission(start + i * 50);
        exec("COMMIT");
        exec("PRAGMA wal_checkpoint(TRUNCATE)");
    }

    char *list = strdup(groups);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        int g = atoi(tok);
        if (g < 1) continue;
        long done = 0;
        double start = mono(), end = start + seconds, now = start;
        while (now < end) {
            exec("BEGIN IMMEDIATE");
            for (int k = 0; k < g; k++) {
                if (savepoints) exec("SAVEPOINT job");
                submission(now_ms());
                if (savepoints) exec("RELEASE job");
            }
            exec("COMMIT");
            done += g;
            now = mono();
        }
        printf("floor group=%d savepoints=%d submissions=%ld seconds=%.3f rate=%.1f\n", g, savepoints, done, now - start, done / (now - start));
        fflush(stdout);
    }
    sqlite3_finalize(s_org);
    sqlite3_finalize(s_replay);
    sqlite3_finalize(s_resp);
    sqlite3_finalize(s_audit);
    sqlite3_close(db);
    return 0;
}
