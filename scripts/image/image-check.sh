#!/usr/bin/env bash
# Builds the repository's Dockerfile and starts the image as a deployment would, then checks it:
#   1. base:  the Node 20 base image (node:20-slim when NODE_IMAGE names it, otherwise the local
#             one scripts/image/base-image.sh makes from Debian packages and the npm registry);
#   2. build: buildah bud of the Dockerfile, NODE_IMAGE passed as its build argument;
#   3. size:  the image's size and what takes it (top directories, biggest node_modules packages);
#   4. run:   from the image, the simulator, the migration step, then the image's own CMD with
#             APP_ENV=sandbox on a fresh PostgreSQL database and Redis; it checks readiness, the
#             image's HEALTHCHECK, a payment taken through the simulator and confirmed, the CLI,
#             that the service runs as a non-root user, that the code is read-only to it, and a
#             graceful SIGTERM stop.
# Containers run with buildah's chroot isolation, which shares the host's network: the processes
# listen on 127.0.0.1 at free ports and reach PostgreSQL and Redis there.
#
# Needs root, buildah (and mmdebstrap for the local base), curl, jq, psql and node on the host.
# Settings (environment): NODE_IMAGE (default: the local base), IMAGE (default
# localhost/gov-payment-channel:check), PG_URL_BASE (default postgres://postgres@127.0.0.1:5432),
# PG_ADMIN_DB (test), REDIS_URL (redis://127.0.0.1:6379).
# Exits non-zero with one "image-check: FAILED: ..." line on the first failure.
set -euo pipefail
cd "$(dirname "$0")/../.."

IMAGE=${IMAGE:-localhost/gov-payment-channel:check}
PG_URL_BASE=${PG_URL_BASE:-postgres://postgres@127.0.0.1:5432}
PG_ADMIN_DB=${PG_ADMIN_DB:-test}
REDIS_URL=${REDIS_URL:-redis://127.0.0.1:6379}
RUN_ID="$(date +%s)_$$"
DB_NAME="img_${RUN_ID}"
work=$(mktemp -d /tmp/image-check.XXXXXX)
# The build's and the processes' output, kept for a failed run's reader.
LOG_DIR=${IMAGE_CHECK_LOG_DIR:-artifacts/image-check}
mkdir -p "$LOG_DIR"
rm -f "$LOG_DIR"/*.log

containers=()
pids=()
db_created=0
started=$(date +%s.%N)
phase_start=$started

log() { echo "image-check: $*"; }
fail() {
  echo "image-check: FAILED: $*" >&2
  for f in "$LOG_DIR"/*.log; do
    [ -s "$f" ] || continue
    echo "---- last lines of $(basename "$f")" >&2
    tail -n 25 "$f" >&2
  done
  exit 1
}
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
phase_done() {
  log "phase $1 took $(elapsed "$phase_start") s"
  phase_start=$(date +%s.%N)
}

cleanup() {
  local pid
  # Only what this run started: its own process ids, its containers, its database.
  for pid in "${pids[@]}"; do
    kill -TERM "$(node_pid_under "$pid")" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  for c in "${containers[@]}"; do
    buildah rm "$c" >/dev/null 2>&1 || true
  done
  if [ "$db_created" = 1 ]; then
    psql "$PG_URL_BASE/$PG_ADMIN_DB" -qc "DROP DATABASE IF EXISTS $DB_NAME WITH (FORCE)" >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[ "$(id -u)" -eq 0 ] || fail "run as root (buildah stores images under /var/lib/containers)"
for tool in buildah curl jq psql node openssl; do
  command -v "$tool" >/dev/null || fail "$tool is not installed"
done

# ---- 1. base ----
if [ -z "${NODE_IMAGE:-}" ]; then
  NODE_IMAGE=$(bash scripts/image/base-image.sh) || fail "could not make the local Node 20 base image"
fi
log "base image: $NODE_IMAGE"
phase_done base

# ---- 2. build ----
build_args=(--isolation chroot --layers --force-rm --format docker --build-arg "NODE_IMAGE=$NODE_IMAGE" -t "$IMAGE")
# The build's RUN steps (npm ci) get an npm configuration of this host's choosing, through a
# read-only mount over npm's global config folder (/usr/local/etc, empty in the base): more
# retries for a flaky network, the host's registry, and, when the host's npm trusts an extra CA
# bundle (npm's cafile, as behind a TLS-inspecting proxy), that bundle. Nothing of it enters a layer.
mkdir -p "$work/npm-etc"
{
  echo "registry=$(npm config get registry)"
  echo "fetch-retries=5"
  echo "fetch-retry-mintimeout=2000"
} >"$work/npm-etc/npmrc"
host_cafile=$(npm config get cafile 2>/dev/null || true)
if [ -n "$host_cafile" ] && [ "$host_cafile" != null ] && [ -r "$host_cafile" ]; then
  cp "$host_cafile" "$work/npm-etc/build-ca.crt"
  echo "cafile=/usr/local/etc/build-ca.crt" >>"$work/npm-etc/npmrc"
  log "the build's npm trusts this host's CA bundle ($host_cafile)"
fi
build_args+=(-v "$work/npm-etc:/usr/local/etc:ro")
# Each line of the build's output is stamped with the seconds since the build began, so the
# slow steps can be named below.
build_started=$(date +%s)
stamp() {
  local line now
  while IFS= read -r line; do
    printf -v now '%(%s)T' -1
    printf '%4d %s\n' $((now - build_started)) "$line"
  done
}
build_rc=0
buildah bud "${build_args[@]}" . 2>&1 | stamp >"$LOG_DIR/build.log" || build_rc=$?
if [ "$build_rc" != 0 ] && grep -qE 'npm error (network|code E(CONNRESET|TIMEDOUT|AI_AGAIN))' "$LOG_DIR/build.log"; then
  # The registry dropped a connection more often than npm retries: once more, from the cache.
  log "the build's npm lost the network; building again"
  mv "$LOG_DIR/build.log" "$LOG_DIR/build-first-attempt.log"
  build_rc=0
  buildah bud "${build_args[@]}" . 2>&1 | stamp >"$LOG_DIR/build.log" || build_rc=$?
fi
if grep -q 'Exit handler never called' "$LOG_DIR/build.log"; then
  # npm 10.8 can crash this way (on a network failure) and still exit 0: the step's layer would
  # stay in the cache without node_modules, and every later build would reuse it.
  bad_layer=$(awk '/Exit handler never called/ { seen = 1 } seen && /--> [0-9a-f]+$/ { print $NF; exit }' "$LOG_DIR/build.log")
  [ -n "$bad_layer" ] && buildah rmi --force "$bad_layer" >/dev/null 2>&1
  fail "npm ci in the build stage crashed; its cached layer ${bad_layer:-?} was removed ($LOG_DIR/build.log)"
fi
[ "$build_rc" = 0 ] || fail "buildah bud failed ($LOG_DIR/build.log)"
log "build steps that took 3 s or more:"
awk '/STEP [0-9]+\/[0-9]+:/ { if (name != "" && $1 - at >= 3) printf "  %4d s  %s\n", $1 - at, name; at = $1; name = substr($0, index($0, $2), 90) }
  END { if (name != "" && $1 - at >= 3) printf "  %4d s  %s\n", $1 - at, name }' "$LOG_DIR/build.log"
log "built $IMAGE ($(buildah images --noheading --format '{{.ID}}' "$IMAGE"))"
# Earlier builds' layers this build no longer uses would pile up run after run: remove the untagged
# images that are no step of this build (IMAGE_CHECK_PRUNE=0 keeps them). Tagged images stay.
if [ "${IMAGE_CHECK_PRUNE:-1}" != 0 ]; then
  keep=$(grep -oE -- '--> (Using cache )?[0-9a-f]{11,}$' "$LOG_DIR/build.log" | sed -E 's/.* ([0-9a-f]{11})[0-9a-f]*$/\1/' | sort -u)
  pruned=0
  for _ in $(seq 1 40); do
    stale=$(buildah images -a -q --filter dangling=true | cut -c1-11 | grep -vxF -f <(echo "$keep") || true)
    [ -n "$stale" ] || break
    # shellcheck disable=SC2086 # one id a word
    buildah rmi $stale >/dev/null 2>&1 || break
    pruned=$((pruned + $(wc -w <<<"$stale")))
  done
  log "pruned $pruned stale layer images of earlier builds"
fi
phase_done build

# ---- 3. size ----
size_ctr=$(buildah from --quiet --pull=never "$IMAGE")
containers+=("$size_ctr")
rootfs=$(buildah mount "$size_ctr")
log "image size: $(buildah images --noheading --format '{{.Size}}' "$IMAGE") (base $NODE_IMAGE: $(buildah images --noheading --format '{{.Size}}' "$NODE_IMAGE" | head -n 1))"
log "largest directories:"
(cd "$rootfs" && du -sh usr/local/bin/node usr/local/lib/node_modules/npm usr/lib usr/share var app/node_modules app/dist | sort -rh | sed 's/^/  /') \
  || fail "could not measure the image's directories"
log "largest packages in /app/node_modules:"
(
  cd "$rootfs/app/node_modules"
  shopt -s nullglob
  packages=()
  for entry in *; do
    if [[ $entry == @* ]]; then packages+=("$entry"/*); else packages+=("$entry"); fi
  done
  du -s -- "${packages[@]}" | sort -rn | head -n 8 | awk '{ printf "  %6.1f MB  %s\n", $1 / 1024, $2 }'
) || fail "could not measure /app/node_modules"
dev_left=$(cd "$rootfs/app/node_modules" && { ls -d typescript vitest esbuild eslint tsx 2>/dev/null || true; })
[ -z "$dev_left" ] || fail "dev dependencies left in the image: $dev_left"
for f in dist/src/bin/api.js dist/src/bin/migrate.js dist/src/bin/cli.js dist/simulator/bin/simulator.js \
  dist/config/banks.json dist/simulator/fixtures/demo.json dist/src/http/sandbox/sandbox.page.js; do
  [ -f "$rootfs/app/$f" ] || fail "/app/$f is missing from the image"
done
[ -n "$(ls "$rootfs/app/dist/src/db/migrations/"*.migration.js 2>/dev/null)" ] || fail "no migrations under /app/dist/src/db/migrations"
buildah umount "$size_ctr" >/dev/null
phase_done size

# ---- 4. run ----
read -r APP_PORT ADMIN_PORT SIM_PORT < <(node -e '
const net = require("node:net");
const one = () => new Promise((res) => { const s = net.createServer().listen(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => res(p)); }); });
Promise.all([one(), one(), one()]).then((p) => console.log(p.join(" ")));')
ADMIN_TOKEN=$(openssl rand -hex 20)
WEBHOOK_SECRET_KEY=$(openssl rand -hex 20)
SIM_URL="http://127.0.0.1:$SIM_PORT"
API="http://127.0.0.1:$APP_PORT/api/v1"

psql "$PG_URL_BASE/$PG_ADMIN_DB" -v ON_ERROR_STOP=1 -qc "CREATE DATABASE $DB_NAME" >/dev/null \
  || fail "could not create database $DB_NAME on $PG_URL_BASE"
db_created=1

sim_ctr=$(buildah from --quiet --pull=never --name "image-check-$RUN_ID-simulator" "$IMAGE") || fail "buildah from $IMAGE failed"
containers+=("$sim_ctr")
app_ctr=$(buildah from --quiet --pull=never --name "image-check-$RUN_ID-app" "$IMAGE") || fail "buildah from $IMAGE failed"
containers+=("$app_ctr")

# A process of a container started with `buildah run`: its node process is the one to signal
# (buildah itself answers SIGTERM by killing its child outright).
node_pid_under() {
  local parent=$1 child
  for child in $(ps -o pid= --ppid "$parent"); do
    if [ "$(cat "/proc/$child/comm" 2>/dev/null)" = node ]; then echo "$child"; return 0; fi
    node_pid_under "$child" && return 0
  done
  return 1
}
wait_http() {
  local url=$1 want=$2 seconds=$3 pid=$4 code
  for _ in $(seq 1 $((seconds * 4))); do
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$url" || true)
    [ "$code" = "$want" ] && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.25
  done
  return 1
}

# `buildah run --isolation chroot ARGS`, its output to LOG. buildah now and then fails to start
# the container when another buildah process starts at the same moment ("sealing memfd copy:
# Device or resource busy"), before anything ran in it: that start is tried again.
brun() {
  local log=$1 rc
  shift
  for _ in 1 2 3; do
    rc=0
    buildah run --isolation chroot "$@" >"$log" 2>&1 || rc=$?
    if [ "$rc" = 0 ] || ! grep -q 'sealing memfd' "$log"; then return "$rc"; fi
    sleep 0.5
  done
  return "$rc"
}

common_env=(--env HOST=127.0.0.1 --env LOG_LEVEL=warn)
brun "$LOG_DIR/simulator.log" "${common_env[@]}" --env SIMULATOR_PORT="$SIM_PORT" --env SIMULATOR_AUTO_APPROVE_MS=0 \
  "$sim_ctr" -- node dist/simulator/bin/simulator.js &
sim_pid=$!
pids+=("$sim_pid")
wait_http "$SIM_URL/__control/payments" 200 20 "$sim_pid" || fail "the simulator did not answer on $SIM_URL"
log "simulator (node dist/simulator/bin/simulator.js) answers on $SIM_URL"

app_env=(
  "${common_env[@]}"
  --env APP_ENV=sandbox
  --env PORT="$APP_PORT"
  --env ADMIN_PORT="$ADMIN_PORT"
  --env ADMIN_TOKEN="$ADMIN_TOKEN"
  --env WEBHOOK_SECRET_KEY="$WEBHOOK_SECRET_KEY"
  --env DATABASE_URL="$PG_URL_BASE/$DB_NAME"
  --env REDIS_URL="$REDIS_URL"
  --env MINISTRY_MOF_URL="$SIM_URL"
  --env MINISTRY_ETAX_URL="$SIM_URL"
  --env MINISTRY_POLICE_URL="$SIM_URL"
  --env MIGRATE_ON_START=false
  --env SHUTDOWN_DRAIN_MS=500
  --env RATE_LIMIT_PER_SECOND=50
)

brun "$LOG_DIR/migrate.log" "${app_env[@]}" "$app_ctr" -- node dist/src/bin/migrate.js \
  || fail "node dist/src/bin/migrate.js failed ($LOG_DIR/migrate.log)"
log "migration step: $(tail -n 1 "$LOG_DIR/migrate.log")"

mapfile -t app_cmd < <(buildah inspect --type image --format '{{range .OCIv1.Config.Cmd}}{{println .}}{{end}}' "$IMAGE" | sed '/^$/d')
[ "${#app_cmd[@]}" -gt 0 ] || fail "the image has no CMD"
brun "$LOG_DIR/app.log" "${app_env[@]}" "$app_ctr" -- "${app_cmd[@]}" &
app_pid=$!
pids+=("$app_pid")
wait_http "$API/health/ready" 200 40 "$app_pid" || fail "GET $API/health/ready did not answer 200 ($LOG_DIR/app.log)"
log "app (CMD ${app_cmd[*]}) ready: GET /api/v1/health/ready 200"
# The image's own HEALTHCHECK command (kept by the docker image format), run beside the service.
mapfile -t health_cmd < <(buildah inspect --type image --format '{{range .Docker.Config.Healthcheck.Test}}{{println .}}{{end}}' "$IMAGE" | sed '/^$/d')
[ "${health_cmd[0]:-}" = CMD ] || fail "the image has no HEALTHCHECK CMD (${health_cmd[*]:-none})"
brun "$work/healthcheck.out" --env PORT="$APP_PORT" "$app_ctr" -- "${health_cmd[@]:1}" \
  || fail "the image's HEALTHCHECK command failed against the running service: $(cat "$work/healthcheck.out")"
log "the image's HEALTHCHECK command passes"
phase_done start

# The service's process: its user, and what that user may write.
node_pid=$(node_pid_under "$app_pid") || fail "no node process under buildah run ($app_pid)"
uid=$(awk '/^Uid:/ { print $2 }' "/proc/$node_pid/status")
[ "$uid" != 0 ] || fail "the service runs as root"
[ "$uid" = 1000 ] || fail "the service runs as uid $uid, not node (1000)"
log "the service's process $node_pid runs as uid $uid (node)"
# shellcheck disable=SC2016 # expanded by the container's shell
brun "$work/probe.out" "$app_ctr" -- sh -c '
  id -un
  for path in /app/dist /app/dist/src/bin /app/node_modules /app; do
    if touch "$path/.write-probe" 2>/dev/null; then echo "writable $path"; rm -f "$path/.write-probe"; fi
  done
  touch /app/.data/.write-probe && rm /app/.data/.write-probe && echo "data dir writable"' \
  || fail "write probe failed to run: $(cat "$work/probe.out")"
probe=$(cat "$work/probe.out")
[ "$(echo "$probe" | head -n 1)" = node ] || fail "the image's user is $(echo "$probe" | head -n 1), not node"
if echo "$probe" | grep -q '^writable'; then fail "the code is writable by the service's user: $(echo "$probe" | grep '^writable' | tr '\n' ' ')"; fi
echo "$probe" | grep -q '^data dir writable' || fail "/app/.data is not writable by node"
log "the code under /app is read-only for user node (only /app/.data is writable)"

# A payment through the simulator: a partner key from the operator CLI, a lookup, the payment,
# the ministry's approval on the simulator's control API, then the partner's read confirms it.
brun "$work/cli.out" --env ADMIN_URL="http://127.0.0.1:$ADMIN_PORT" --env ADMIN_TOKEN="$ADMIN_TOKEN" \
  "$app_ctr" -- node dist/src/bin/cli.js partner create --name "Image check" \
  || fail "node dist/src/bin/cli.js partner create failed: $(cat "$work/cli.out")"
partner=$(cat "$work/cli.out")
KEY=$(jq -r .apiKey <<<"$partner")
case "$KEY" in gpk_sandbox_*) ;; *) fail "the CLI printed no sandbox key: $partner" ;; esac
log "operator CLI (node dist/src/bin/cli.js) created a partner"

invoices=$(curl -sS --max-time 10 -H "X-API-Key: $KEY" "$API/invoices?ttd=5317878") || fail "invoice lookup failed"
INVOICE=$(jq -r '[.invoices[] | select(.amount == 150000)][0].id // empty' <<<"$invoices")
[ -n "$INVOICE" ] || fail "the lookup found no 150000 invoice: $(head -c 300 <<<"$invoices")"
created=$(curl -sS --max-time 15 -H "X-API-Key: $KEY" -H "Content-Type: application/json" \
  -H "X-Idempotency-Key: $(node -p 'crypto.randomUUID()')" -d "{\"invoiceId\":\"$INVOICE\"}" "$API/payments") \
  || fail "POST /payments failed"
PAYMENT=$(jq -r '.id // empty' <<<"$created")
[ "$(jq -r .status <<<"$created")" = submitted ] || fail "POST /payments did not submit: $(head -c 300 <<<"$created")"
# The ministry's side of the payment, as the simulator holds it: the partner API never shows refNum.
sim_payments=$(curl -sS --max-time 10 "$SIM_URL/__control/payments") || fail "the simulator's /__control/payments failed"
read -r ref source < <(jq -r --arg id "$PAYMENT" \
  '([.payments[] | select(.paymentId == $id)] + [.payments[] | select(.status == "submitted")])[0] | "\(.refNum) \(.source)"' <<<"$sim_payments") || true
if [ -z "$ref" ] || [ "$ref" = null ]; then fail "the simulator holds no submitted payment: $(head -c 300 <<<"$sim_payments")"; fi
approved=$(curl -sS --max-time 10 -H "Content-Type: application/json" -d "{\"refNum\":\"$ref\",\"source\":\"$source\"}" "$SIM_URL/__control/approve") \
  || fail "the simulator's /__control/approve failed"
jq -e '.approved' >/dev/null <<<"$approved" || fail "the simulator did not approve $ref: $approved"
status=
for _ in $(seq 1 20); do
  status=$(curl -sS --max-time 10 -H "X-API-Key: $KEY" "$API/payments/$PAYMENT" | jq -r '.status // empty')
  [ "$status" = submitted ] || break
  sleep 0.5
done
[ "$status" = confirmed ] || fail "payment $PAYMENT is '$status', not confirmed, after the ministry approved it"
log "payment $PAYMENT of invoice $ref: submitted, approved on the simulator, confirmed"
phase_done checks

# SIGTERM to the service's node process: readiness drops, then it drains and exits 0.
kill -TERM "$node_pid"
for _ in $(seq 1 12); do
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$API/health/ready" || true)
  [ "$code" = 200 ] || break
  sleep 0.1
done
rc=0
wait "$app_pid" || rc=$?
pids=("$sim_pid")
[ "$rc" = 0 ] || fail "the service exited $rc after SIGTERM ($LOG_DIR/app.log)"
log "SIGTERM: readiness answered ${code:-none} while draining, the service exited 0"
kill -TERM "$(node_pid_under "$sim_pid")" 2>/dev/null || true
wait "$sim_pid" 2>/dev/null || true
pids=()
phase_done stop

log "OK in $(elapsed "$started") s"
