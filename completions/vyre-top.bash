# bash completion for vyre-top (installed as
# share/bash-completion/completions/vyre-top). Self-contained: needs nothing
# from the bash-completion package.

_vyre_top()
{
    local cur prev
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD - 1]}
    COMPREPLY=()
    case $prev in
    -d | --delay)
        COMPREPLY=($(compgen -W "0.1 0.5 1 2 5" -- "$cur"))
        return
        ;;
    -n | --iterations | -w | --width)
        return
        ;;
    esac
    COMPREPLY=($(compgen -W "-d --delay -n --iterations -C --no-color -b --batch -w --width
        --json --no-gpu -h --help -V --version" -- "$cur"))
}
complete -F _vyre_top vyre-top
