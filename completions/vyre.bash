# bash completion for the vyre tools whose options are declared once
# (tools/common/tool_opt.h); installed as
# share/bash-completion/completions/<tool> for each of them. Self-contained:
# needs nothing from the bash-completion package.
#
# The binary says what to offer: `TOOL --completion-helper [WORDS...]`
# prints, for the command (or the command's action: `vyre-cachectl triton
# prune`) the words name, or the tool itself, one line an
# option or command, tab-separated: the word, 1 when it takes an argument
# ('-' for an operand: a word to offer, or "<file>" for file names), and what
# completes that argument ("<file>", "<dir>", words, or words after a ',' for
# a comma-separated list). The helper gets every word typed before the
# current one, options included. So this file never goes stale.

_vyre_tool()
{
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
    local spec word takes values words="" i head files=0
    local -a typed=("${COMP_WORDS[@]:1:COMP_CWORD-1}")
    COMPREPLY=()
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
            *)
                COMPREPLY=($(compgen -W "$values" -- "$cur"))
                # "key=": the value follows without a blank (-o max_size=10G).
                [[ ${#COMPREPLY[@]} == 1 && ${COMPREPLY[0]} == *= ]] && compopt -o nospace 2>/dev/null
                ;;
            esac
            return
        fi
        if [[ $takes == - && $word == "<file>" ]]; then
            files=1
            continue
        fi
        words+=" $word"
    done <<<"$spec"
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
    if [[ $files == 1 && $cur != -* ]]; then
        compopt -o filenames 2>/dev/null
        COMPREPLY+=($(compgen -f -- "$cur"))
    fi
}
complete -F _vyre_tool vyre-top vyre-bench vyre-exporter vyre-cachectl
