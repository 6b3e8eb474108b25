# bash completion for vyre-cachectl (installed as
# share/bash-completion/completions/vyre-cachectl). Self-contained: needs
# nothing from the bash-completion package.

# The full keys of the cache the command line names (--cache-dir, -o), from
# 'vyre-cachectl ls -q' (show and remote push take a key or a unique prefix).
_vyre_cachectl_keys()
{
    local bin=${COMP_WORDS[0]} i
    local -a args=()
    [[ -x $bin ]] || bin=vyre-cachectl
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in
        --cache-dir | -o | --option) args+=("${COMP_WORDS[i]}" "${COMP_WORDS[i + 1]}"); ((i++)) ;;
        esac
    done
    "$bin" "${args[@]}" ls -q 2>/dev/null
}

_vyre_cachectl()
{
    local cur prev cmd i
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD - 1]}
    cmd=
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in
        --cache-dir | -o | --option | --width) ((i++)) ;; # its value is not the command
        -*) ;;
        *) cmd=${COMP_WORDS[i]}; break ;;
        esac
    done
    COMPREPLY=()
    local global="--cache-dir --json -q --quiet -v --verbose -o --option --width --wide --csv --md --help"
    local keys="max_size max_age umask read_only quarantine_max_age remote_storage"

    case $prev in
    --cache-dir | --dir)
        compopt -o filenames 2>/dev/null
        COMPREPLY=($(compgen -d -- "$cur"))
        return
        ;;
    --sort)
        COMPREPLY=($(compgen -W "lru size age hits key" -- "$cur"))
        return
        ;;
    --kind)
        COMPREPLY=($(compgen -W "cubin ptx fatbin" -- "$cur"))
        return
        ;;
    --arch)
        COMPREPLY=($(compgen -W "sm_75 sm_80 sm_86 sm_89 sm_90 sm_90a sm_100 sm_100a sm_100f
            sm_120" -- "$cur"))
        return
        ;;
    -o | --option)
        compopt -o nospace 2>/dev/null
        COMPREPLY=($(compgen -W "max_size= max_age= umask= read_only= quarantine_max_age=" \
            -- "$cur"))
        return
        ;;
    --older-than | --max-age | --max-size | --limit | --entry | --toolchain | --jobs | --width)
        return
        ;;
    esac

    case $cmd in
    '')
        COMPREPLY=($(compgen -W "stats ls show verify prune reindex seed explain clear jit
            remote config zero-stats triton inductor -z --zero-stats -s --show-stats -M --max-size
            --evict-older-than --version $global" -- "$cur"))
        ;;
    config)
        if [[ $prev == config || $prev == --unset ]]; then
            COMPREPLY=($(compgen -W "$keys --unset --yes $global" -- "$cur"))
        elif [[ $prev == read_only ]]; then
            COMPREPLY=($(compgen -W "true false" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$global" -- "$cur"))
        fi
        ;;
    zero-stats)
        COMPREPLY=($(compgen -W "$global" -- "$cur"))
        ;;
    stats | reindex)
        COMPREPLY=($(compgen -W "$global" -- "$cur"))
        ;;
    ls)
        COMPREPLY=($(compgen -W "--sort --arch --kind --older-than --limit $global" -- "$cur"))
        ;;
    show)
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "$global" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$(_vyre_cachectl_keys)" -- "$cur"))
        fi
        ;;
    verify)
        COMPREPLY=($(compgen -W "--repair $global" -- "$cur"))
        ;;
    prune)
        COMPREPLY=($(compgen -W "--max-size --max-age --arch --stale --stale-toolchain
            --toolchain --dry-run $global" -- "$cur"))
        ;;
    seed)
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "--arch --entry --jobs -- $global" -- "$cur"))
        else
            local ext
            compopt -o filenames 2>/dev/null
            for ext in cu cuh ptx cubin; do
                COMPREPLY+=($(compgen -f -X "!*.$ext" -- "$cur"))
            done
            COMPREPLY+=($(compgen -d -- "$cur"))
        fi
        ;;
    explain)
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "--arch --entry -- $global" -- "$cur"))
        else
            local ext
            compopt -o filenames 2>/dev/null
            for ext in cu cuh ptx cubin; do
                COMPREPLY+=($(compgen -f -X "!*.$ext" -- "$cur"))
            done
            COMPREPLY+=($(compgen -d -- "$cur"))
        fi
        ;;
    clear)
        COMPREPLY=($(compgen -W "--yes $global" -- "$cur"))
        ;;
    jit)
        COMPREPLY=($(compgen -W "--clear --yes $global" -- "$cur"))
        ;;
    remote)
        if [[ $cur != -* && ${COMP_WORDS[COMP_CWORD - 1]} != remote ]] &&
            [[ " ${COMP_WORDS[*]} " == *" push "* ]]; then
            COMPREPLY=($(compgen -W "$(_vyre_cachectl_keys)" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "check push pull --all $global" -- "$cur"))
        fi
        ;;
    triton)
        COMPREPLY=($(compgen -W "stats ls show verify relocate prune clear explain --dir --repair
            --dry-run --max-size --max-age --keep-arch --triton-version --auto --print-timer --yes
            --all $global" -- "$cur"))
        ;;
    inductor)
        COMPREPLY=($(compgen -W "stats ls verify prune clear --dir --repair --max-size --max-age
            --dry-run --yes $global" -- "$cur"))
        ;;
    esac
}
# No '-o filenames' here: with it, readline takes every word for a file name,
# and a folder named 'remote' in the current directory turned the subcommand
# into 'remote/'. The branches that do complete files turn it on (compopt).
complete -F _vyre_cachectl vyre-cachectl
