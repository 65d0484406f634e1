#!/usr/bin/env python3
"""After kill -9: is every 2xx the benchmark counted in the database?

Reads the per-thread id files the wrk scripts wrote (OUT_DIR/*.ids, lines "response ID REVISION"
or "upload CLIENT_UPLOAD_ID SIZE") and checks, on the database as recovered from its WAL:
  response  the row exists and its revision is at least the one the 2xx answer showed
  upload    the uploads row exists with that size, and its blob file exists with that size
Prints one RESULT line; exits 1 if anything is missing.

  verify_ids.py --db DATA/surveyd.sqlite --blobs DATA/blobs --ids-dir OUT_DIR"""
import argparse, glob, os, sqlite3, sys


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--db", required=True)
    p.add_argument("--blobs", required=True)
    p.add_argument("--ids-dir", required=True)
    a = p.parse_args()

    responses, uploads = {}, {}
    files = sorted(glob.glob(os.path.join(a.ids_dir, "*.ids")))
    for path in files:
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) != 3:
                    continue  # a line cut short cannot come from a complete answer; wrk flushes at exit
                kind, ident, n = parts[0], parts[1], int(parts[2])
                if kind == "response":
                    responses[ident] = max(responses.get(ident, 0), n)
                elif kind == "upload":
                    uploads[ident] = n

    # Opening read-write lets SQLite recover the WAL left by the killed process.
    db = sqlite3.connect(a.db)
    db.execute("CREATE TEMP TABLE want(id TEXT PRIMARY KEY, n INTEGER)")
    db.executemany("INSERT INTO temp.want VALUES (?, ?)", responses.items())
    missing_responses = db.execute(
        "SELECT w.id, w.n, r.revision FROM temp.want w LEFT JOIN responses r ON r.response_id = w.id "
        "WHERE r.response_id IS NULL OR r.revision < w.n").fetchall()
    db.execute("DELETE FROM temp.want")
    db.executemany("INSERT INTO temp.want VALUES (?, ?)", uploads.items())
    rows = db.execute("SELECT w.id, w.n, u.size, u.sha256 FROM temp.want w LEFT JOIN uploads u ON u.client_upload_id = w.id").fetchall()
    missing_uploads = []
    for ident, size, stored_size, sha in rows:
        if stored_size is None or stored_size != size:
            missing_uploads.append((ident, "no row" if stored_size is None else f"size {stored_size} != {size}"))
            continue
        blob = os.path.join(a.blobs, sha[0:2], sha[2:4], sha)  # BlobStore.path(sha256:)
        if not os.path.exists(blob):
            blob = None
        if blob is None or os.path.getsize(blob) != size:
            missing_uploads.append((ident, "no blob file" if blob is None else "blob size differs"))
    total_rows = db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    integrity = db.execute("PRAGMA integrity_check").fetchone()[0]
    db.close()

    for m in missing_responses[:10]:
        print("missing response", m, file=sys.stderr)
    for m in missing_uploads[:10]:
        print("missing upload", m, file=sys.stderr)
    ok = not missing_responses and not missing_uploads and integrity == "ok"
    print(f"RESULT phase=verify files={len(files)} responses_checked={len(responses)} responses_missing={len(missing_responses)} "
          f"uploads_checked={len(uploads)} uploads_missing={len(missing_uploads)} responses_in_db={total_rows} "
          f"integrity={integrity} ok={1 if ok else 0}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
