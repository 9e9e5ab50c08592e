# Sourced first by a benchmark shell script: runs the script again in a process group of its own
# and waits for it, so that a SIGTERM, SIGINT or SIGHUP stops everything the script started before
# this exits. Without it bash dies at once and leaves the command it waits on running (a tokenizer
# training, an apt-get, a data prepare: minutes on the cores the next measurement shares), and a
# trap in the script itself would run only once that command had finished.
if [ -z "${SIXND_BENCH_GROUP:-}" ]; then
  SIXND_BENCH_GROUP=1 setsid bash "$0" "$@" &
  group=$!
  stop_group() {
    kill -TERM -- "-$group" 2>/dev/null
    wait "$group"
    exit "$1"
  }
  trap 'stop_group 129' HUP
  trap 'stop_group 130' INT
  trap 'stop_group 143' TERM
  wait "$group"
  exit $?
fi
