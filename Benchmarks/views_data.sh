# Sourced by odata.sh, dataviews.sh and map.sh (after bench_dir.sh): a data dir with the survey of
# fixtures/make_views.py and N responses of it. The caller sets HERE, WORK, BIN and PORT.
#
#   serve LOG ARGS...            BIN serve on PORT (SERVER_PID), waiting until it answers
#   stop                         stops it
#   make_views_data_dir DIR N SPACING_MS
#                                an organization, an admin (ADMIN: its token), a collector
#                                (COLLECTOR: its token; COLLECTOR_ID) and the survey (SURVEY,
#                                VERSION, HASH) made through the CLI and the API; three responses
#                                sent through the API, whose stored answers must equal the
#                                variants they sent byte for byte (the seeded rows are stored as
#                                the server stores them); then N - 3 more seeded by
#                                seed_responses.py with --answers-variants (server stopped), one
#                                every SPACING_MS ending a minute ago. Fixtures in WORK/fixtures:
#                                VARIANTS (1,000) different answers documents, each with its own
#                                location (map.sh: one per response, so no two points coincide).

serve() {
    local logfile=$1; shift
    "$BIN" serve --port "$PORT" --no-log --startup-check quick "$@" > "$logfile" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 6000); do
        curl -sf "http://127.0.0.1:$PORT/healthz" > /dev/null && return 0
        kill -0 "$SERVER_PID" 2>/dev/null || die "the server exited at start (see $logfile)"
        sleep 0.05
    done
    die "the server did not answer within 300 s (see $logfile)"
}
stop() { kill "$SERVER_PID"; wait "$SERVER_PID" || true; SERVER_PID=; }

make_views_data_dir() {
    local dir=$1 n=$2 spacing=$3 future u v i body stored started
    mkdir -p "$dir"
    python3 "$HERE/fixtures/make_views.py" "$WORK/fixtures" "${VARIANTS:-1000}" > /dev/null
    future=$(date -u -d '+1 year' +%Y-%m-%dT%H:%M:%SZ)
    ORG=$("$BIN" admin create-org --name "Bench field team" --expires-at "$future" --data-dir "$dir" | tail -1)
    u=$("$BIN" admin create-user --org "$ORG" --name Collector --roles collector --data-dir "$dir")
    COLLECTOR_ID=$(echo "$u" | sed -n 's/^userId //p'); COLLECTOR=$(echo "$u" | tail -1)
    ADMIN=$("$BIN" admin create-user --org "$ORG" --name Admin --roles admin --data-dir "$dir" | tail -1)
    serve "$WORK/make.log" --data-dir "$dir"
    api() {
        curl -sf -X "$1" "http://127.0.0.1:$PORT$2" -H "Authorization: Bearer $3" -H 'Content-Type: application/json' -d "$4"
    }
    SURVEY=$(api POST "/v1/orgs/$ORG/surveys" "$ADMIN" '{"title":"Household survey (views benchmark)"}' | jq -r .surveyId)
    v=$(api POST "/v1/orgs/$ORG/surveys/$SURVEY/versions" "$ADMIN" "{\"definition\":$(cat "$WORK/fixtures/views.json")}")
    VERSION=$(echo "$v" | jq -r .surveyVersionId); HASH=$(echo "$v" | jq -r .contentHash)
    [ -n "$VERSION" ] && [ "$VERSION" != null ] || die "publishing the survey: $v"
    for i in 1 2 3; do
        body="{\"answers\":$(sed -n "${i}p" "$WORK/fixtures/variants.jsonl"),\"capturedAt\":\"2025-06-01T08:00:00Z\",\"clientSubmissionId\":\"views-check-$i\",\"contentHash\":\"$HASH\",\"surveyVersionId\":\"$VERSION\"}"
        api POST "/v1/orgs/$ORG/responses" "$COLLECTOR" "$body" > /dev/null || die "the API refused answers variant $i"
    done
    stop
    for i in 1 2 3; do
        stored=$(sqlite3 "$dir/surveyd.sqlite" "SELECT answers FROM responses WHERE client_submission_id = 'views-check-$i' AND survey_id = '$SURVEY'")
        [ "$stored" = "$(sed -n "${i}p" "$WORK/fixtures/variants.jsonl")" ] || die "answers variant $i is not stored as written: $stored"
    done
    started=$(date +%s.%N)
    python3 "$HERE/seed_responses.py" --db "$dir/surveyd.sqlite" --org "$ORG" --survey "$SURVEY" --version "$VERSION" \
        --submitter "$COLLECTOR_ID" --answers "$WORK/fixtures/answers.json" --answers-variants "$WORK/fixtures/variants.jsonl" \
        --content-hash "$HASH" --count "$((n - 3))" --spacing-ms "$spacing" --review-state submitted > "$WORK/seed.log" 2>&1 \
        || { tail -5 "$WORK/seed.log"; die "seeding"; }
    rec "seeded n=$((n - 3)) (and 3 through the API) in $(python3 -c "print(f'{$(date +%s.%N) - $started:.1f}')") s; db_bytes=$(stat -c %s "$dir/surveyd.sqlite")" \
        "answers_bytes_avg=$(sqlite3 "$dir/surveyd.sqlite" "SELECT CAST(AVG(LENGTH(answers)) AS INTEGER) FROM responses")"
}
