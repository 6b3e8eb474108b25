# bash completion for the vyre tools whose options are declared once
# (tools/common/tool_opt.h); installed as
# share/bash-completion/completions/<tool> for each of them. Self-contained:
# needs nothing from the bash-completion package.
#
# The binary says what to offer: `TOOL --completion-helper [WORDS...]`
# prints, for the command the words name (or the tool itself), one line an
# option or command, tab-separated: the word, 1 when it takes an argument,
# and what completes that argument ("<file>", "<dir>", words, or words after
# a ',' for a comma-separated list). So this file never goes stale.

_vyre_tool()
{
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
    local spec word takes values words="" i head
    local -a typed=()
    COMPREPLY=()
    for ((i = 1; i < COMP_CWORD; i++)); do
        [[ ${COMP_WORDS[i]} == -* ]] || typed+=("${COMP_WORDS[i]}")
    done
    spec=$("${COMP_WORDS[0]}" --completion-helper "${typed[@]}" 2>/dev/null) || return
    while IFS=$'\t' read -r word takes values; do
        if [[ $takes == 1 && $prev == "$word" ]]; then
            case $values in
            "<file>") COMPREPLY=($(compgen -f -- "$cur")) ;;
            "<dir>") COMPREPLY=($(compgen -d -- "$cur")) ;;
            ,*)
                head=
                [[ $cur == *,* ]] && head=${cur%,*},
                COMPREPLY=($(compgen -P "$head" -W "${values#,}" -- "${cur##*,}"))
                ;;
            *) COMPREPLY=($(compgen -W "$values" -- "$cur")) ;;
            esac
            return
        fi
        words+=" $word"
    done <<<"$spec"
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -F _vyre_tool vyre-top
