#!/usr/bin/env bash
# check-config-doc.sh - fails if docs/CONFIG.md and the relay disagree about flags or config keys.
#
#   scripts/check-config-doc.sh [RELAY_BINARY]     (default build/release/signalr-relay)
#
# Three sources are compared with the rows of the flag table in docs/CONFIG.md (lines starting
# "| `--"; column 1 the flag, column 2 its config-file key as `"key"` or "—"):
#   - the binary's --help text: every --flag it mentions must be documented;
#   - relay/config.c: every flag the parser compares (strcmp(name, "x") in apply_setting,
#     strcmp(arg, "--x") in config_parse_args) must be documented, every config-file key
#     (those flag names, minus the ones a file refuses, plus the file-only keys compared with
#     strcmp(key, "x")) must be documented, and nothing else may be; and the Default column must
#     match what config_init sets (column 4; seconds for *_ms fields, K/M for *_bytes fields), for
#     every setting stored straight into a field (&cfg->field), --listen and --log-level;
#   - the binary itself: every documented flag and key is fed to it (a flag with a dummy value,
#     a key in a temporary config file) and must not be refused as unknown. A final unknown
#     flag makes sure the relay never starts.
# Also: --help must mention every flag config.c accepts, packaging/relay.json.example must
# use documented keys only and load cleanly, and so must the JSON examples of CONFIG.md and
# README.md.
# Then two negative controls prove the check still bites: a copy of config.c with one extra flag,
# and a copy of CONFIG.md with one invented flag, must each fail.
# Exit status 0 when everything agrees, 1 with one line per disagreement otherwise.
set -euo pipefail
export LC_ALL=C
root=$(cd "$(dirname "$0")/.." && pwd)

case "${1:-}" in
  -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
esac
relay=${1:-$root/build/release/signalr-relay}
doc=$root/docs/CONFIG.md
sample=$root/packaging/relay.json.example
if [ ! -x "$relay" ]; then
  echo "check-config-doc: no relay binary at $relay (build first, or pass its path)" >&2
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The parser: flags in relay/config.c, the config file's own keys in relay/config_file.c.
src=$work/config-source.c
cat "$root/relay/config.c" "$root/relay/config_file.c" >"$src"
# An unknown flag the relay refuses after reading everything before it, so no probe ever starts it.
sentinel=--zz-check-config-doc-end

# --- extraction -----------------------------------------------------------------------------------
doc_rows() { grep -E '^\| *`-' "$1" || true; }
doc_flags() { doc_rows "$1" | awk -F'|' '{print $2}' | grep -oE '`-{1,2}[a-z0-9][a-z0-9-]*' | tr -d '`' | sort -u; }
doc_keys() { doc_rows "$1" | awk -F'|' '{print $3}' | grep -oE '`"[a-z0-9][a-z0-9-]*"`' | tr -d '`"' | sort -u; }

# Flag names the parser compares: apply_setting's strcmp(name, "x"), config_parse_args' strcmp(arg, "--x").
src_setting_names() { grep -oE 'strcmp\(name, "[a-z0-9][a-z0-9-]*"\)' "$1" | sed -E 's/.*"(.*)".*/\1/' | sort -u; }
src_flags() {
  { src_setting_names "$1" | sed 's/^/--/'
    grep -oE 'strcmp\(arg, "-{1,2}[a-z0-9][a-z0-9-]*"\)' "$1" | sed -E 's/.*"(.*)".*/\1/'; } | sort -u
}
# Config-file keys: setting names a file does not refuse, plus keys only a file has ("hubs", ...).
# apply_json_member compares the key with strcmp(key, "x"): a name that is also a setting name is
# one it refuses ("config", "hub", "cors-origin"); the others are file-only keys.
src_keys() {
  local settings keyed
  settings=$(src_setting_names "$1")
  keyed=$(grep -oE 'strcmp\(key, "[a-z0-9][a-z0-9-]*"\)' "$1" | sed -E 's/.*"(.*)".*/\1/' | sort -u)
  { comm -23 <(echo "$settings") <(echo "$keyed"); comm -13 <(echo "$settings") <(echo "$keyed"); } |
    grep -v '^$' | sort -u
}
# "name field" for each setting apply_setting stores straight into a field (&cfg->field).
src_setting_fields() {
  awk '/strcmp\(name, "/ { match($0, /strcmp\(name, "[a-z0-9-]+"\)/); name = substr($0, RSTART + 14, RLENGTH - 16); left = 3 }
       left > 0 { if (match($0, /&cfg->[a-z_]+/)) { print name, substr($0, RSTART + 6, RLENGTH - 6); left = 0 } else left-- }' "$1"
}
# "field value" for each default config_init sets: numbers evaluated, strings unquoted.
src_init_values() {
  awk '/^void config_init\(/ { on = 1 } on && /^}/ { on = 0 } on' "$1" |
    sed -nE 's/^ *cfg->([a-z_]+) = (dup_or_die\("(.*)"\)|([0-9u <]+)|LOG_([A-Z]+));$/\1 \3\4\5/p' |
    while read -r field value; do
      if [[ $value =~ ^[0-9u\ \<]+$ ]]; then value=$(( ${value//u/} )); fi
      [[ $value =~ ^[A-Z]+$ ]] && value=${value,,}
      echo "$field $value"
    done
}
# The documented default of FLAG: the first `...` of the row's Default column, as written.
doc_default() { doc_rows "$1" | awk -F'|' -v f="\`$2 " '$2 ~ f || $2 ~ f"`" {print $4}' | grep -oE '`[^`]*`' | head -1 | tr -d '`'; }
# "4M" -> 4194304, "256K" -> 262144, "15" -> 15, "0.5" -> 0.5
doc_number() { case "$1" in *[kK]) echo $(( ${1%?} << 10 )) ;; *[mM]) echo $(( ${1%?} << 20 )) ;; *) echo "$1" ;; esac; }
help_flags() { "$relay" --help | grep -oE '(^|[^a-z0-9-])--[a-z0-9][a-z0-9-]*' | grep -oE -- '--[a-z0-9-]+' | sort -u; }

# --- probes of the binary ----------------------------------------------------------------------------
# Prints the relay's stderr for FLAG with a dummy value (or alone for --help/--version/-h).
probe_flag() {
  case "$1" in
    --help|-h|--version)
      "$relay" "$1" >"$work/out" 2>&1 && [ -s "$work/out" ] || echo "unknown option '$1'" ;;
    *) timeout 20 "$relay" "$1" __doc-check__ "$sentinel" x 2>&1 >/dev/null || true ;;
  esac
}
probe_key() {
  printf '{ "%s": "__doc-check__" }\n' "$1" >"$work/probe.json"
  timeout 20 "$relay" --config "$work/probe.json" "$sentinel" x 2>&1 >/dev/null || true
}

# --- the check -----------------------------------------------------------------------------------
# check DOC SRC: prints one line per disagreement, returns 1 if there was any.
check() {
  local doc=$1 src=$2 problems=0 f k out
  local dflags sflags hflags dkeys skeys
  dflags=$(doc_flags "$doc"); sflags=$(src_flags "$src"); hflags=$(help_flags)
  dkeys=$(doc_keys "$doc"); skeys=$(src_keys "$src")
  # The source parse relies on config.c's layout; if that changes, say so instead of passing.
  if [ "$(echo "$sflags" | grep -c .)" -lt 10 ] || [ "$(echo "$skeys" | grep -c .)" -lt 5 ]; then
    echo "relay/config.c: found only $(echo "$sflags" | grep -c .) flags and $(echo "$skeys" | grep -c .) keys; has its option parser changed shape? update scripts/check-config-doc.sh"
    return 1
  fi
  for f in $(comm -23 <(echo "$hflags") <(echo "$dflags")); do
    echo "flag $f is in 'signalr-relay --help' but not in docs/CONFIG.md"; problems=1
  done
  for f in $(comm -23 <(echo "$sflags") <(echo "$dflags")); do
    echo "flag $f is accepted by relay/config.c but not in docs/CONFIG.md"; problems=1
  done
  for f in $(comm -13 <(echo "$sflags") <(echo "$dflags")); do
    echo "flag $f is in docs/CONFIG.md but relay/config.c does not accept it"; problems=1
  done
  for f in $(comm -23 <(echo "$sflags" | grep -vx -- -h) <(echo "$hflags")); do
    echo "flag $f is accepted by relay/config.c but missing from 'signalr-relay --help'"; problems=1
  done
  for f in $dflags; do
    out=$(probe_flag "$f")
    if grep -qF "unknown option '$f'" <<<"$out"; then
      echo "flag $f is in docs/CONFIG.md but the relay binary refuses it as unknown"; problems=1
    fi
  done
  # Defaults: what config_init sets, against the Default column (seconds for *_ms fields).
  local inits field value want got
  inits=$(src_init_values "$src")
  [ "$(src_setting_fields "$src" | grep -c .)" -ge 5 ] && [ "$(echo "$inits" | grep -c .)" -ge 5 ] ||
    { echo "relay/config.c: cannot find the defaults (config_init) or their flags; update scripts/check-config-doc.sh"; problems=1; }
  while read -r f field; do
    value=$(awk -v k="$field" '$1 == k { $1 = ""; sub(/^ /, ""); print; exit }' <<<"$inits")
    grep -q "^$field\( \|$\)" <<<"$inits" || continue
    got=$(doc_default "$doc" "--$f")
    [ "$got" = '""' ] && got=
    if [[ $field == *_ms ]]; then
      want=$value; got=$(awk -v s="$got" 'BEGIN { if (s ~ /^[0-9.]+$/) printf "%d", s * 1000 + 0.5; else print "?" }')
    elif [[ $field == *_bytes ]]; then
      want=$value; got=$(doc_number "$got")
    else
      want=$value
    fi
    if [ "$got" != "$want" ]; then
      echo "flag --$f: docs/CONFIG.md gives the default '$(doc_default "$doc" "--$f")', relay/config.c sets $field = '$value'"; problems=1
    fi
  done < <(src_setting_fields "$src")
  want="$(awk '$1 == "listen_address" {print $2}' <<<"$inits"):$(awk '$1 == "listen_port" {print $2}' <<<"$inits")"
  [ "$(doc_default "$doc" --listen)" = "$want" ] ||
    { echo "flag --listen: docs/CONFIG.md gives the default '$(doc_default "$doc" --listen)', relay/config.c sets $want"; problems=1; }
  want=$(awk '$1 == "log_level" {print $2}' <<<"$inits")
  [ "$(doc_default "$doc" --log-level)" = "$want" ] ||
    { echo "flag --log-level: docs/CONFIG.md gives the default '$(doc_default "$doc" --log-level)', relay/config.c sets $want"; problems=1; }
  for k in $(comm -23 <(echo "$skeys") <(echo "$dkeys")); do
    echo "config-file key \"$k\" is accepted by relay/config.c but not in docs/CONFIG.md"; problems=1
  done
  for k in $(comm -13 <(echo "$skeys") <(echo "$dkeys")); do
    echo "config-file key \"$k\" is in docs/CONFIG.md but relay/config.c does not accept it"; problems=1
  done
  for k in $dkeys; do
    out=$(probe_key "$k")
    if grep -qE "unknown option '--$k'|\"$k\" is not allowed" <<<"$out"; then
      echo "config-file key \"$k\" is in docs/CONFIG.md but the relay binary refuses it"; problems=1
    fi
  done
  return $problems
}

status=0
check "$doc" "$src" || status=1

# The sample config: documented keys only (top-level keys are the lines indented by two spaces),
# and it loads (the relay gets as far as the sentinel flag after it).
if [ -f "$sample" ]; then
  for k in $(grep -oE '^  "[a-z0-9][a-z0-9-]*" *:' "$sample" | tr -d ' ":' | sort -u); do
    grep -qx -- "$k" <(doc_keys "$doc") || { echo "packaging/relay.json.example uses undocumented key \"$k\""; status=1; }
  done
  out=$(timeout 20 "$relay" --config "$sample" "$sentinel" x 2>&1 >/dev/null || true)
  if ! grep -qF "unknown option '$sentinel'" <<<"$out"; then
    echo "packaging/relay.json.example does not load: $out"; status=1
  fi
fi

# Every ```json example in docs/CONFIG.md and README.md loads too.
for md in "$doc" "$root/README.md"; do
  rm -f "$work"/example*.json
  awk -v dir="$work" '/^```json$/ { n++; f = dir "/example" n ".json"; on = 1; next } /^```$/ { on = 0 } on { print > f }' "$md"
  for f in "$work"/example*.json; do
    [ -e "$f" ] || continue
    out=$(timeout 20 "$relay" --config "$f" "$sentinel" x 2>&1 >/dev/null || true)
    grep -qF "unknown option '$sentinel'" <<<"$out" || { echo "a JSON example in ${md#"$root"/} does not load: $out"; status=1; }
  done
done

# Negative controls: the check must fail on a flag added to config.c without docs, and on a
# documented flag that does not exist.
probe=zz-undocumented-probe
sed -E "0,/strcmp\(name, \"listen\"\)/s//strcmp(name, \"$probe\") == 0) return CONFIG_OK;\n    if (&/" "$src" >"$work/config.c"
if out=$(check "$doc" "$work/config.c") || ! grep -q -- "--$probe is accepted by relay/config.c but not in docs/CONFIG.md" <<<"$out"; then
  echo "negative control failed: a flag added to config.c without docs was not caught"; status=1
fi
{ cat "$doc"; echo "| \`--$probe N\` | \`\"$probe\"\` | 1 | bytes | invented |"; } >"$work/CONFIG.md"
if out=$(check "$work/CONFIG.md" "$src") || ! grep -q -- "--$probe is in docs/CONFIG.md but the relay binary refuses it" <<<"$out"; then
  echo "negative control failed: a documented flag that does not exist was not caught"; status=1
fi

if [ $status -eq 0 ]; then
  echo "check-config-doc: docs/CONFIG.md documents all $(doc_flags "$doc" | wc -l) flags and $(doc_keys "$doc" | wc -l) config-file keys of $(basename "$relay") and relay/config.c"
fi
exit $status
