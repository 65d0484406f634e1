#!/usr/bin/env python3
"""Seeds stored responses straight into a surveyd data dir's SQLite database (the server must be
stopped, or at least idle: this takes the write lock in large transactions).

Each row is what POST /v1/orgs/{org}/responses would have stored for the benchmark survey:
  responses  response_id rsp_<uuidv7> (time-ordered, same format as Sources/SurveyDomain/Ids.swift),
             a random clientSubmissionId (like a phone's UUID), the SHA-256 of the ~1.5 KB request body as sent,
             its canonical digest, the canonical answers, receivedAt, review_state, revision 1
  audit      the matching "response.accept" entry
  uploads    with --files N: N stored files (a JPEG signature, then random bytes; sizes spread evenly
             from half to one and a half --file-bytes), each written to DATA/blobs/aa/bb/<sha256> as the
             server places it, with its uploads row and its "upload.commit" audit entry
Receive times are spread over the past (one row every --spacing-ms, ending --end-ago-s seconds ago),
so the ids are in time order and the responses the benchmark adds later sort after them.

  seed_responses.py --db DATA/surveyd.sqlite --org ORG --survey SRV --version SVV --submitter USR
                    --answers Benchmarks/fixtures/answers.json --count 1000000
                    [--review-state submitted] [--ids-out FILE [--ids-sample N]] [--answers-variants FILE]
                    [--files N --file-bytes 50000 --file-question photo]

--ids-out writes response ids (all of them, or N spread evenly) one per line, for the read and
review benchmarks. --answers-variants FILE (canonical answers documents, one a line) gives row i the
document i mod their number instead of --answers (varied answers for the summary and the feed)."""
import argparse, hashlib, json, os, sqlite3, sys, time


def uuid7_id(prefix: str, ms: int) -> str:
    b = bytearray(os.urandom(16))
    b[0:6] = ms.to_bytes(6, "big")
    b[6] = (b[6] & 0x0F) | 0x70
    b[8] = (b[8] & 0x3F) | 0x80
    h = b.hex()
    return f"{prefix}_{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def seed_files(db, a, blobs: str, now: int) -> None:
    """Stored files, as PUT .../uploads/{clientUploadId} leaves them: the blob, its row, its audit entry."""
    t0 = time.monotonic()
    total = 0
    db.execute("BEGIN IMMEDIATE")
    for i in range(a.files):
        size = a.file_bytes // 2 + (a.file_bytes * i) // max(1, a.files - 1) if a.files > 1 else a.file_bytes
        data = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + os.urandom(max(0, size - 11))
        sha = hashlib.sha256(data).hexdigest()
        d = os.path.join(blobs, sha[0:2], sha[2:4])
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, sha), "wb") as f:
            f.write(data)
        cuid = "seed-file-" + os.urandom(12).hex()
        at = now - 30_000 + i
        db.execute("INSERT INTO uploads(org_id, client_upload_id, uploader, survey_version_id, question_id, content_type, size, sha256,"
                   " received_at) VALUES (?, ?, ?, ?, ?, 'image/jpeg', ?, ?, ?)",
                   (a.org, cuid, a.submitter, a.version, a.file_question, len(data), sha, at))
        db.execute("INSERT INTO audit(org_id, actor, action, target_type, target_id, revision, detail, at)"
                   " VALUES (?, ?, 'upload.commit', 'upload', ?, NULL, ?, ?)",
                   (a.org, a.submitter, cuid, f"sha256={sha} size={len(data)}", at))
        total += len(data)
    db.execute("COMMIT")
    os.sync()
    el = time.monotonic() - t0
    print(f"seeded {a.files} files, {total / 1e6:.1f} MB in {el:.1f} s", file=sys.stderr)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--db", required=True)
    p.add_argument("--org", required=True)
    p.add_argument("--survey", required=True)
    p.add_argument("--version", required=True)
    p.add_argument("--submitter", required=True)
    p.add_argument("--answers", required=True, help="canonical answers JSON (Benchmarks/fixtures/answers.json)")
    p.add_argument("--answers-variants", help="canonical answers documents, one a line, used in turn")
    p.add_argument("--content-hash", default=None, help="the version's contentHash, written into the request body")
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--review-state", default="submitted")
    p.add_argument("--spacing-ms", type=int, default=20)
    p.add_argument("--end-ago-s", type=int, default=60)
    p.add_argument("--batch", type=int, default=50_000)
    p.add_argument("--ids-out")
    p.add_argument("--ids-sample", type=int, default=0)
    p.add_argument("--files", type=int, default=0, help="stored files (uploads) to add")
    p.add_argument("--file-bytes", type=int, default=50_000, help="their mean size")
    p.add_argument("--file-question", default="photo")
    a = p.parse_args()

    answers = open(a.answers, encoding="utf-8").read().strip()
    json.loads(answers)  # must be valid JSON
    variants = [answers]
    if a.answers_variants:
        variants = [line.strip() for line in open(a.answers_variants, encoding="utf-8") if line.strip()]
        for v in variants:
            json.loads(v)
    content_hash = a.content_hash or ("sha256:" + "0" * 64)

    db = sqlite3.connect(a.db, isolation_level=None)
    if db.execute("PRAGMA journal_mode=WAL").fetchone()[0].lower() != "wal":
        print("seed: the database is not in WAL mode", file=sys.stderr)
        return 1
    db.execute("PRAGMA busy_timeout=10000")
    db.execute("PRAGMA synchronous=OFF")   # seeding only; a checkpoint with fsync ends it
    db.execute("PRAGMA cache_size=-262144")
    db.execute("PRAGMA foreign_keys=ON")
    for table, col, val in (("orgs", "org_id", a.org), ("surveys", "survey_id", a.survey),
                            ("survey_versions", "survey_version_id", a.version), ("users", "user_id", a.submitter)):
        if db.execute(f"SELECT 1 FROM {table} WHERE {col} = ?", (val,)).fetchone() is None:
            print(f"seed: no {table} row {val}", file=sys.stderr)
            return 1

    now = int(time.time() * 1000)
    start = now - a.end_ago_s * 1000 - a.count * a.spacing_ms
    sample_every = max(1, a.count // a.ids_sample) if a.ids_sample else 1
    ids_out = open(a.ids_out, "w") if a.ids_out else None
    written = 0
    t0 = time.monotonic()

    def rows(lo: int, hi: int):
        nonlocal written
        for i in range(lo, hi):
            ms = start + i * a.spacing_ms
            rid = uuid7_id("rsp", ms)
            csid = "seed-" + os.urandom(16).hex()
            answers = variants[i % len(variants)]
            body = ('{"answers":' + answers + ',"capturedAt":"2025-06-01T08:00:00Z","clientSubmissionId":"' + csid +
                    '","contentHash":"' + content_hash + '","surveyVersionId":"' + a.version + '"}').encode()
            # The body is written canonically (sorted keys, no whitespace), so its digest is the
            # canonical digest surveyd computes.
            digest = "sha256:" + hashlib.sha256(body).hexdigest()
            body_sha256 = hashlib.sha256(body).digest()  # stored instead of the body (schema step 2)
            if ids_out and i % sample_every == 0:
                ids_out.write(rid + "\n")
            written += 1
            yield (rid, a.org, csid, a.submitter, a.survey, a.version, digest, body_sha256, answers, ms - 3_600_000, ms,
                   a.review_state, rid, csid, a.review_state, ms)

    # One statement for both rows keeps the response and its audit entry together.
    db.execute("CREATE TEMP TABLE seed_rows(response_id, org_id, csid, submitter, survey_id, version_id, digest, body, answers,"
               " captured_at, received_at, review_state, target_id, d_csid, d_state, at)")
    for lo in range(0, a.count, a.batch):
        hi = min(a.count, lo + a.batch)
        db.execute("BEGIN IMMEDIATE")
        db.execute("DELETE FROM temp.seed_rows")
        db.executemany("INSERT INTO temp.seed_rows VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rows(lo, hi))
        db.execute("""
            INSERT INTO responses(response_id, org_id, client_submission_id, submitter, survey_id, survey_version_id,
                request_digest, request_body, request_sha256, answers, field_task_id, captured_at, received_at, review_state, revision)
            SELECT response_id, org_id, csid, submitter, survey_id, version_id, digest, X'', body, answers, NULL,
                captured_at, received_at, review_state, 1 FROM temp.seed_rows ORDER BY response_id""")
        db.execute("""
            INSERT INTO audit(org_id, actor, action, target_type, target_id, revision, detail, at)
            SELECT org_id, submitter, 'response.accept', 'response', target_id, 1,
                '{"clientSubmissionId":"' || d_csid || '","toState":"' || d_state || '"}', at
            FROM temp.seed_rows ORDER BY response_id""")
        db.execute("COMMIT")
        if a.count >= 200_000:
            print(f"seed: {hi}/{a.count} ({hi / (time.monotonic() - t0):.0f} rows/s)", file=sys.stderr, flush=True)
    if a.files:
        seed_files(db, a, os.path.join(os.path.dirname(os.path.abspath(a.db)), "blobs"), now)
    db.execute("PRAGMA synchronous=FULL")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    if ids_out:
        ids_out.close()
    el = time.monotonic() - t0
    print(f"seeded {written} responses in {el:.1f} s ({written / el:.0f}/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
