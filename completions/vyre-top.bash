# bash completion for vyre-top (installed as
# share/bash-completion/completions/vyre-top). Self-contained: needs nothing
# from the bash-completion package. The options come from the binary itself
# (`vyre-top --completion-helper`: one line an option, tab-separated: the
# word, 1 when it takes an argument, what completes that argument), so this
# file never goes stale.

_vyre_top()
{
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
    local spec word takes values words=""
    COMPREPLY=()
    spec=$("${COMP_WORDS[0]}" --completion-helper 2>/dev/null) || return
    while IFS=$'\t' read -r word takes values; do
        if [[ $takes == 1 && $prev == "$word" ]]; then
            case $values in
            "<file>") COMPREPLY=($(compgen -f -- "$cur")) ;;
            "<dir>") COMPREPLY=($(compgen -d -- "$cur")) ;;
            *) COMPREPLY=($(compgen -W "$values" -- "$cur")) ;;
            esac
            return
        fi
        words+=" $word"
    done <<<"$spec"
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -F _vyre_top vyre-top
