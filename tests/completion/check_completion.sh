#!/usr/bin/env bash
# Checks one tool's option table against what users see: every option the
# binary's --completion-helper declares (tools/common/tool_opt.h) must be
# in its --help, in its man page, and be offered by its bash completion
# (driven here as bash does: COMP_WORDS, COMP_CWORD, the completion
# function, COMPREPLY); an option that takes listed values must complete
# to them.
#   check_completion.sh TOOL_BINARY MAN_PAGE COMPLETION_SCRIPT [COMMAND]
# With COMMAND (vyre-bench's "compare", or a command and its action as one
# argument: vyre-cachectl's "triton prune"), that command's options.
# Prints one line per mismatch; exit 1 when there is any.
set -u
tool=$1 man=$2 script=$3
read -r -a cmd <<<"${4:-}"
name=$(basename "$tool")
where="$name${4:+ $4}"
fail=0
miss() {
    echo "$where: $*"
    fail=1
}

spec=$("$tool" --completion-helper "${cmd[@]}") || {
    echo "$name: --completion-helper failed"
    exit 1
}
[ -n "$spec" ] || miss "--completion-helper declares no option"
help=$("$tool" "${cmd[@]}" --help)
# The man page's text without roff's escapes ("\-\-delay" is "--delay").
mantext=$(sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' "$man")

# shellcheck source=/dev/null
. "$script"
func=$(complete -p "$name" 2>/dev/null | sed -n 's/.*-F \([^ ]*\) .*/\1/p')
[ -n "$func" ] || miss "the completion script registers no function for '$name'"

# Completes the words given (the last one being typed); prints COMPREPLY.
complete_words() {
    COMP_WORDS=("$tool" "${cmd[@]}" "$@")
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    COMPREPLY=()
    "$func"
    printf '%s\n' "${COMPREPLY[@]}"
}

while IFS=$'\t' read -r word takes values; do
    [ -n "$word" ] || continue
    if [[ $takes == - ]]; then # an operand (a configuration key): offered
        [[ -z $func || $word == "<file>" ]] && continue
        complete_words "${word:0:3}" | grep -qx -- "$word" || miss "operand $word is not completed from '${word:0:3}'"
        continue
    fi
    if [[ $word == --* ]]; then
        grep -qE -- "(^|[[ ,])$word([] =,]|$)" <<<"$help" || miss "$word is not in --help"
        grep -qE -- "(^|[^a-z-])$word([^a-z-]|$)" <<<"$mantext" || miss "$word is not in $(basename "$man")"
    elif [[ $word == -* ]]; then
        grep -qE -- "(^|[ \[])$word(,| |$)" <<<"$help" || miss "$word is not in --help"
    else # a command: listed in the tool's --help, named in its man page
        grep -qE -- "^  $word " <<<"$help" || miss "command $word is not in --help"
        grep -qE -- "(^|[^a-z-])$word([^a-z-]|$)" <<<"$mantext" || miss "command $word is not in $(basename "$man")"
    fi
    if [ -n "$func" ]; then
        complete_words "${word:0:3}" | grep -qx -- "$word" || miss "$word is not completed from '${word:0:3}'"
        if [[ $takes == 1 && -n $values && $values != "<file>" && $values != "<dir>" ]]; then
            got=$(complete_words "$word" "" | sort | tr '\n' ' ')
            want=$(tr ' ' '\n' <<<"${values#,}" | sort | tr '\n' ' ') # ",a b": a list
            [ "$got" == "$want" ] || miss "$word's values complete to '$got', not '$want'"
        fi
    fi
done <<<"$spec"
exit $fail
