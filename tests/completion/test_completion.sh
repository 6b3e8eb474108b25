#!/usr/bin/env bash
# CTest "completion": every tool's option tables against its --help, man
# page and bash completion (check_completion.sh): the tool's own, each
# command's and each command's actions' (vyre-cachectl triton prune), then
# planted mismatches that the check must report.
#   test_completion.sh SOURCE_DIR TOOLS_BINARY_DIR
set -u
src=$1 bin=$2
check=$src/tests/completion/check_completion.sh
# The tools, whose options come from tables (tools/common/tool_opt.h),
# each with its commands (the words its completion helper lists that are
# no options) and their actions (the same, one level down).
tools="vyre-top vyre-bench vyre-exporter vyre-cachectl"
words() { # the commands or actions the helper lists after the words given
    "$@" | awk -F '\t' '$1 !~ /^-/ && $2 != "-" { print $1 }'
}
status=0 checked=0
for t in $tools; do
    bash "$check" "$bin/$t" "$src/docs/man/$t.1" "$src/completions/vyre.bash" || status=1
    for c in $(words "$bin/$t" --completion-helper); do
        bash "$check" "$bin/$t" "$src/docs/man/$t.1" "$src/completions/vyre.bash" "$c" || status=1
        checked=$((checked + 1))
        for a in $(words "$bin/$t" --completion-helper "$c"); do
            bash "$check" "$bin/$t" "$src/docs/man/$t.1" "$src/completions/vyre.bash" "$c $a" ||
                status=1
            checked=$((checked + 1))
        done
    done
done
# vyre-cachectl's actions are checked: a helper that lost them would pass.
[ "$(words "$bin/vyre-cachectl" --completion-helper triton | tr '\n' ' ')" = \
    "stats ls show explain verify prune clear relocate " ] ||
    { echo "vyre-cachectl --completion-helper triton does not list triton's actions"; status=1; }

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

# 4. vyre-cachectl: an action's table (triton prune) with an option that
#    neither triton's --help nor the man page has.
cc=$bin/vyre-cachectl
cat >"$work/a/vyre-cachectl" <<EOS
#!/usr/bin/env bash
if [ "\$*" = "--completion-helper triton prune" ]; then "$cc" "\$@"; printf -- '--planted-prune\t0\t\n'; exit 0; fi
exec "$cc" "\$@"
EOS
chmod +x "$work/a/vyre-cachectl"
out=$(bash "$check" "$work/a/vyre-cachectl" "$src/docs/man/vyre-cachectl.1" "$src/completions/vyre.bash" "triton prune")
[ $? -ne 0 ] || { echo "planted 4: the check passed"; status=1; }
expect "vyre-cachectl triton prune: --planted-prune is not in --help" "$out"
expect "--planted-prune is not in vyre-cachectl.1" "$out"

# 5. vyre-cachectl: a man page that lost an action's option (triton prune's
#    --keep-arch) and one of triton's actions (relocate).
grep -v -e 'keep\\-arch' -e 'relocate' "$src/docs/man/vyre-cachectl.1" >"$work/vyre-cachectl.1"
out=$(bash "$check" "$cc" "$work/vyre-cachectl.1" "$src/completions/vyre.bash" "triton prune")
[ $? -ne 0 ] || { echo "planted 5: the check passed"; status=1; }
expect "--keep-arch is not in vyre-cachectl.1" "$out"
out=$(bash "$check" "$cc" "$work/vyre-cachectl.1" "$src/completions/vyre.bash" "triton")
[ $? -ne 0 ] || { echo "planted 5b: the check passed"; status=1; }
expect "command relocate is not in vyre-cachectl.1" "$out"

[ $status -eq 0 ] && echo "completion: $tools: every command's and action's table ($checked), --help, man page and completion agree; 5 planted mismatches reported"
exit $status
