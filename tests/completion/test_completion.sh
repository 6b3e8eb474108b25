#!/usr/bin/env bash
# CTest "completion": every converted tool's option table against its
# --help, man page and bash completion (check_completion.sh), then three
# planted mismatches that the check must report.
#   test_completion.sh SOURCE_DIR TOOLS_BINARY_DIR
set -u
src=$1 bin=$2
check=$src/tests/completion/check_completion.sh
# The tools whose options come from one table (tools/common/tool_opt.h).
tools="vyre-top"
status=0
for t in $tools; do
    bash "$check" "$bin/$t" "$src/docs/man/$t.1" "$src/completions/vyre.bash" || status=1
done

work=$(mktemp -d "${TMPDIR:-/tmp}/vyre-test-completion.XXXXXX")
trap 'rm -rf "$work"' EXIT
top=$bin/vyre-top
expect() { # expect WHAT OUTPUT: the check must have failed naming WHAT
    if ! grep -qF -- "$1" <<<"$2"; then
        echo "planted: the check did not report '$1'; it printed:"
        echo "$2"
        status=1
    fi
}

# 1. An option in the table that neither --help nor the man page has.
mkdir -p "$work/a"
cat >"$work/a/vyre-top" <<EOS
#!/usr/bin/env bash
if [ "\${1:-}" = --completion-helper ]; then "$top" --completion-helper; printf -- '--planted\t0\t\n'; exit 0; fi
exec "$top" "\$@"
EOS
chmod +x "$work/a/vyre-top"
out=$(bash "$check" "$work/a/vyre-top" "$src/docs/man/vyre-top.1" "$src/completions/vyre.bash")
[ $? -ne 0 ] || { echo "planted 1: the check passed"; status=1; }
expect "--planted is not in --help" "$out"
expect "--planted is not in vyre-top.1" "$out"

# 2. A completion script written by hand that lacks an option.
cat >"$work/stale.bash" <<'EOS'
_stale() { COMPREPLY=($(compgen -W "-d --delay -h --help" -- "${COMP_WORDS[COMP_CWORD]}")); }
complete -F _stale vyre-top
EOS
out=$(bash "$check" "$top" "$src/docs/man/vyre-top.1" "$work/stale.bash")
[ $? -ne 0 ] || { echo "planted 2: the check passed"; status=1; }
expect "--no-gpu is not completed" "$out"

# 3. A man page that lost an option.
grep -v 'no\\-gpu' "$src/docs/man/vyre-top.1" >"$work/vyre-top.1"
out=$(bash "$check" "$top" "$work/vyre-top.1" "$src/completions/vyre.bash")
[ $? -ne 0 ] || { echo "planted 3: the check passed"; status=1; }
expect "--no-gpu is not in vyre-top.1" "$out"

[ $status -eq 0 ] && echo "completion: $tools: table, --help, man page and completion agree; 3 planted mismatches reported"
exit $status
