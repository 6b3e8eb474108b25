# bash completion for vyre-bench (installed as
# share/bash-completion/completions/vyre-bench). Self-contained: needs
# nothing from the bash-completion package.

_vyre_bench()
{
    local cur prev cmd i
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD - 1]}
    cmd=
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in
        -*) ;;
        *) cmd=${COMP_WORDS[i]}; break ;;
        esac
    done
    COMPREPLY=()

    case $prev in
    --db | --spec)
        COMPREPLY=($(compgen -f -- "$cur"))
        return
        ;;
    -o | --output)
        # plot's output: the extension names the format.
        COMPREPLY=($(compgen -f -X '!*.svg' -- "$cur") $(compgen -f -X '!*.png' -- "$cur")
            $(compgen -f -X '!*.html' -- "$cur") $(compgen -d -- "$cur"))
        return
        ;;
    --suite)
        # A comma-separated list: complete the last name.
        local done_part=
        [[ $cur == *,* ]] && done_part=${cur%,*},
        COMPREPLY=($(compgen -P "$done_part" -W "launch memcpy bandwidth compile cache" \
            -- "${cur##*,}"))
        return
        ;;
    --mode)
        COMPREPLY=($(compgen -W "hot cold both" -- "$cur"))
        return
        ;;
    --devices)
        COMPREPLY=($(compgen -W "all 0 1 2 3 4 5 6 7" -- "$cur"))
        return
        ;;
    --entry | --arch | -a | --axis | --min-samples | --min-time | --max-noise | --timeout | \
        --limit | --alpha | --min-effect | --width)
        return
        ;;
    esac

    case $cmd in
    '')
        COMPREPLY=($(compgen -W "devices run runs show compare export plot rm --help --version" \
            -- "$cur"))
        ;;
    devices)
        COMPREPLY=($(compgen -W "--json --help" -- "$cur"))
        ;;
    run)
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "--suite --axis -a --entry --spec --mode --min-samples
                --min-time --max-noise --timeout --quick --no-kernels --disable-blocking-kernel --devices --db --csv
                --json --wide --width -q --arch --dry-run --rounds --vs --help" -- "$cur"))
        else
            # A sweep's kernel: CUDA C or PTX (and directories to get there).
            COMPREPLY=($(compgen -f -X '!*.cu' -- "$cur") $(compgen -f -X '!*.ptx' -- "$cur")
                $(compgen -d -- "$cur"))
        fi
        ;;
    runs)
        COMPREPLY=($(compgen -W "--db --limit --json --wide --width --help" -- "$cur"))
        ;;
    show)
        COMPREPLY=($(compgen -W "--db --kernels --json --wide --width --help last last-1" -- "$cur"))
        ;;
    compare)
        COMPREPLY=($(compgen -W "--db --alpha --min-effect --max-noise --strict --allow-missing --json --csv --wide --width --help last last-1" -- "$cur"))
        ;;
    export)
        COMPREPLY=($(compgen -W "--db --csv --json --help last last-1" -- "$cur"))
        ;;
    plot)
        COMPREPLY=($(compgen -W "-o --output --db --help last last-1" -- "$cur"))
        ;;
    rm)
        COMPREPLY=($(compgen -W "--db --failed --json --help last" -- "$cur"))
        ;;
    esac
}
complete -o filenames -F _vyre_bench vyre-bench
