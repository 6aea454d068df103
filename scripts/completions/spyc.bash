# SPDX-License-Identifier: MIT
# bash completion for spyc: commands, their options, pids, formats, files.
# Commands and options come from spyc's own --help, so they never drift.

_spyc_commands()
{
	"$1" --help 2>/dev/null |
		sed -n '/^commands:/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p'
}

_spyc_options()
{
	"$1" "$2" --help 2>/dev/null |
		grep -oE -- '(^|[ ,])--?[a-zA-Z][a-zA-Z-]*' |
		sed 's/^[ ,]*//' | sort -u
}

_spyc()
{
	local cur prev cmd i spyc=${COMP_WORDS[0]}

	COMPREPLY=()
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD-1]}
	cmd=
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		--) # what follows is the program to launch
			COMPREPLY=($(compgen -c -- "$cur"))
			return ;;
		-*) ;;
		*) [ -z "$cmd" ] && cmd=${COMP_WORDS[i]} ;;
		esac
	done
	if [ -z "$cmd" ]; then
		COMPREPLY=($(compgen -W "$(_spyc_commands "$spyc") --help --version" -- "$cur"))
		return
	fi
	case $prev in
	-p|--pid)
		COMPREPLY=($(compgen -W "$(cd /proc && ls -d [0-9]* 2>/dev/null)" -- "$cur"))
		return ;;
	-f|--format)
		# report's -f is --function: a name, nothing to offer
		[ "$cmd" = report ] && return
		COMPREPLY=($(compgen -W "speedscope folded svg chrome pprof html" -- "$cur"))
		return ;;
	-o|--output|--program-output)
		COMPREPLY=($(compgen -f -- "$cur"))
		return ;;
	-r|--rate|-d|--duration|--interval|--max-depth|--top)
		return ;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$(_spyc_options "$spyc" "$cmd")" -- "$cur"))
	else
		COMPREPLY=($(compgen -f -- "$cur"))
	fi
}

complete -F _spyc spyc
