#!/bin/bash
# hvrun --analyze on input it must refuse: one line naming the cause, exit 1 (bad
# input) or 2 (usage), never a hang, a crash or a verdict on garbage. The broken dumps
# are made here from the good fixtures (tests/doctor/fixtures/no_hang), one fault each.
# Usage: analyze_bad_input.sh BUILD_DIR
set -u
B=$(cd "$1" && pwd); H=$(cd "$(dirname "$0")" && pwd)
. "$H/doctor_lib.sh"
HV=$B/bin/hvrun
GOOD=$H/fixtures/no_hang
W=$(mktemp -d /tmp/hv-doctor-bad.XXXXXX)
trap 'rm -rf "$W"' EXIT
R1=hv-flight.ompi-4242.rank1.json
case_dir() { rm -rf "$W/$1"; mkdir -p "$W/$1"; cp "$GOOD"/*.json "$W/$1/"; echo "$W/$1"; }
one_line() { # NAME RC REGEX DIR: exactly one line of output, matching REGEX, exit RC
  local name=$1 want=$2 pat=$3 out rc; shift 3
  out=$(timeout --signal=KILL 30 "$HV" "$@" 2>&1); rc=$?
  if [ "$rc" = "$want" ] && [ "$(printf '%s\n' "$out" | wc -l)" = 1 ] && printf '%s\n' "$out" | grep -Eq -- "$pat"; then
    lib_ok "$name: $out"
  else lib_bad "$name: rc $rc (want $want), want one line matching /$pat/:"; printf '%s\n' "$out" | sed 's/^/    | /' | head -10; fi
}

mkdir -p "$W/empty"
one_line "empty DIR" 1 "^hvrun: error: --analyze: no flight-recorder dumps \(hv-flight.<job>.rank<W>.json\) in $W/empty" \
  --analyze "$W/empty"
one_line "nonexistent DIR" 1 "^hvrun: error: --analyze: cannot read $W/nope: No such file or directory$" --analyze "$W/nope"
d=$(case_dir trunc); head -c 700 "$GOOD/$R1" > "$d/$R1"
one_line "a truncated dump" 1 "$d/$R1 is truncated: the JSON document ends early after 700 bytes" --analyze "$d"
d=$(case_dir zero); : > "$d/$R1"
one_line "an empty dump file" 1 "$d/$R1 is empty \(0 bytes\)" --analyze "$d"
d=$(case_dir notjson); printf 'this is not JSON\n' > "$d/$R1"
one_line "a non-JSON file" 1 "$d/$R1 is not a valid JSON document \(line 1, column [0-9]+: " --analyze "$d"
d=$(case_dir array); printf '[1, 2]\n' > "$d/$R1"
one_line "JSON, but not an object" 1 "$d/$R1: the document is an array, expected an object" --analyze "$d"
d=$(case_dir otherformat); sed 's/"hv-flight-recorder"/"chrome-trace"/' "$GOOD/$R1" > "$d/$R1"
one_line "another format" 1 "$d/$R1: not a flight-recorder document \('format' is \"chrome-trace\"" --analyze "$d"
d=$(case_dir jobs); sed 's/"ompi-4242"/"ompi-7"/' "$GOOD/$R1" > "$d/hv-flight.ompi-7.rank1.json"; rm "$d/$R1"
one_line "dumps of different jobs mixed" 1 "dumps of different jobs mixed: .*rank0.json is of job 'ompi-4242', .*hv-flight.ompi-7.rank1.json of job 'ompi-7' \(analyze one job at a time: --job ID" \
  --analyze "$d"
lib_expect "... --job picks one of them" 0 "^verdict: no hang" "$HV" --analyze "$d" --job ompi-7
lib_expect "... --job of no dump there" 1 "no flight-recorder dump of job 'ompi-9' in $d \(4 of other jobs\)" "$HV" --analyze "$d" --job ompi-9
d=$(case_dir versions); sed 's/"version": 1,/"version": 2,/' "$GOOD/$R1" > "$d/$R1"
grep -q '"version": 2,' "$d/$R1" || lib_bad "the version edit did not apply"
one_line "dumps of different versions mixed" 1 "dumps of different versions of the format mixed: .*rank0.json is version 1, .*rank1.json is version 2" \
  --analyze "$d"
one_line "a version this hvrun does not read" 1 "$d/$R1: version 2 of the flight-recorder format; this hvrun reads version 1" \
  --analyze "$d/$R1"
d=$(case_dir missing); grep -v '"world_size"' "$GOOD/$R1" > "$d/$R1"
one_line "a missing field" 1 "$d/$R1: field 'world_size' is missing" --analyze "$d"
d=$(case_dir missing_event); python3 -c '
import json,sys; d=json.load(open(sys.argv[1])); del d["comms"][0]["events"][3]["t_submit"]; json.dump(d, open(sys.argv[2],"w"))' "$GOOD/$R1" "$d/$R1"
one_line "a missing field deep inside" 1 "$d/$R1: field 'comms\[0\].events\[3\].t_submit' is missing" --analyze "$d"
d=$(case_dir type); python3 -c '
import json,sys; d=json.load(open(sys.argv[1])); d["comms"][0]["events"][0]["count"]="1024"; json.dump(d, open(sys.argv[2],"w"))' "$GOOD/$R1" "$d/$R1"
one_line "a field of the wrong type" 1 "$d/$R1: field 'comms\[0\].events\[0\].count' is a string, expected a whole number" --analyze "$d"
d=$(case_dir phase); sed 's/"phase": "user"/"phase": "sleeping"/' "$GOOD/$R1" > "$d/$R1"
one_line "a value outside the contract" 1 "$d/$R1: field 'comms\[0\].phase' is 'sleeping', expected user, negotiating, executing or stopped" --analyze "$d"
d=$(case_dir range); sed 's/"world_rank": 1,/"world_rank": 9,/' "$GOOD/$R1" > "$d/$R1"
one_line "a rank outside the world" 1 "$d/$R1: world_rank 9 is outside world_size 4" --analyze "$d"
d=$(case_dir coord); python3 -c '
import json,sys; d=json.load(open(sys.argv[1])); d["comms"][0]["coordinator"]={"waiting":[{"name":"x","coll":"allreduce","submitted_by":[0],"missing":[7],"first_seen":1.0}]}; json.dump(d, open(sys.argv[2],"w"))' "$GOOD/$R1" "$d/$R1"
one_line "a rank outside the communicator" 1 "$d/$R1: 'comms\[0\].coordinator.waiting\[0\].missing' names rank 7, outside the communicator's size 4" --analyze "$d"
d=$(case_dir dup); cp "$GOOD/$R1" "$d/hv-flight.ompi-4242.rank3.json"
one_line "duplicate ranks" 1 "two documents of rank 1: .*rank1.json and .*rank3.json" --analyze "$d"
d=$(case_dir size); sed 's/"world_size": 4,/"world_size": 5,/' "$GOOD/$R1" > "$d/$R1"
one_line "documents that disagree on the world size" 1 "$d/$R1 says world_size 5, .*rank0.json says 4: not the same job" --analyze "$d"
d=$(case_dir unreadable); chmod 000 "$d/$R1"
if [ "$(id -u)" != 0 ]; then
  one_line "an unreadable dump" 1 "cannot read $d/$R1: Permission denied" --analyze "$d"
fi
# files that are not dumps are not read
d=$(case_dir others); printf 'garbage' > "$d/notes.txt"; chmod 644 "$d/$R1"
lib_expect "other files in DIR are ignored" 0 "^verdict: no hang" "$HV" --analyze "$d"

echo "# usage"
one_line "--analyze without DIR" 2 "option --analyze needs a value" --analyze
one_line "--analyze with a program" 2 "--analyze takes no program \(got 'prog'\)" --analyze "$GOOD" prog
one_line "--analyze with -np" 2 "--analyze goes with no launch option" -np 2 --analyze "$GOOD"
one_line "--analyze and --status" 2 "conflicting options: --analyze and --status" --analyze "$GOOD" --status
one_line "--raw without --status" 2 "--raw goes with --status" --raw
one_line "--slurm-job with --job" 2 "--slurm-job does not go with --job" --status --slurm-job 12 --job x
one_line "--slurm-job not a job id" 2 "--slurm-job 'abc': expected a Slurm job id" --status --slurm-job abc
lib_summary
