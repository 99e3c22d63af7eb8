# bash completion for vcpustat(8)                          -*- shell-script -*-
# Installed as <datadir>/bash-completion/completions/vcpustat.
# The option lists are those of `vcpustat COMMAND --help`; tests/pkg/completion.sh
# checks that they stay equal.

_vcpustat_commands="top record report export serve plot query check replay import sync probe"

_vcpustat_options() # COMMAND: its options
{
	case $1 in
	top) echo "-d --delay -n --iterations -b --batch -j --json --vm --top --address-spaces --demo -v --verbose -h --help
		--file --from --speed --vcpu --tid --pcpu --cgroup" ;;
	record) echo "-o --output -l --level -t --duration --max-size --rotate-every --keep --capture --address-spaces
		--ringbuf --meta -j --json -q --quiet -v --verbose" ;;
	report) echo "--from --to --vm --cgroup --vcpu --tid --pcpu -j --json --top --placement --host-topology --flow
		--min-impact -h --help" ;;
	export) echo "-f --format -o --output -i --interval -e --every --file --from --to --no-vcpu-labels
		--top-culprits --vm --vcpu --tid --pcpu --cgroup --address-spaces -v --verbose -h --help" ;;
	serve) echo "-l --listen -u --user --web.config.file --no-vcpu-labels --top-culprits --vm --cgroup --cache-ms
		--refresh --address-spaces -v --verbose -h --help" ;;
	plot) echo "-o --output --from --to -b --buckets --timeline --live -i --interval --vm --vcpu --tid --pcpu
		--cgroup -v --verbose -h --help" ;;
	query) echo "--at --path --from --to --json --utc --vm --vcpu --tid --pcpu --cgroup -h --help" ;;
	check) echo "--repair -o --output --in-place --json -h --help" ;;
	replay) echo "-o --output -j --json -q --quiet" ;;
	import) echo "--host --guest -o --output --vm-name --vm --lenient --isa --cpus --meta -j --json
		-q --quiet" ;;
	sync) echo "-p --pairs -j --json --host --guest --vm --lenient -h --help" ;;
	probe) echo "-d --duration -j --json -h --help" ;;
	esac
}

# The running VMs' names and pids would need root and BPF; --vm completes
# nothing rather than guess, nor do the filters' lists (--vcpu, --tid, --pcpu) and patterns (--cgroup).
# `report --pcpu` alone is a view: the word after it completes as files.
_vcpustat()
{
	local cur prev words cword cmd i
	_init_completion -s || return

	# The command: the first word after vcpustat that is one of them (no
	# command, or only options: top).
	cmd=top
	for ((i = 1; i < cword; i++)); do
		if [[ " $_vcpustat_commands " == *" ${words[i]} "* ]]; then
			cmd=${words[i]}
			break
		fi
		[[ ${words[i]} == -* ]] && break
	done

	# Arguments of options.
	case $cmd:$prev in
	*:-h | *:--help | *:--version | *:-V) return ;;
	top:--file | export:--file | record:-o | record:--output | replay:-o | replay:--output | \
		import:-o | import:--output)
		_filedir sht
		return
		;;
	record:--capture)
		_filedir vcap
		return
		;;
	plot:-o | plot:--output)
		_filedir svg
		return
		;;
	export:-o | export:--output | sync:-p | sync:--pairs | sync:--guest | import:--host)
		_filedir # any file (ftrace text, trace.dat); a trace may also be an LTTng (CTF) directory
		return
		;;
	sync:--host) # a trace or a recording
		_filedir
		return
		;;
	import:--guest) # VM=FILE: the file after '=' (readline's word after '=')
		if [[ $cur == *=* ]]; then
			cur=${cur#*=}
			_filedir
		fi
		return
		;;
	record:-l | record:--level)
		COMPREPLY=($(compgen -W "vcpu full" -- "$cur"))
		return
		;;
	export:-f | export:--format)
		COMPREPLY=($(compgen -W "prometheus openmetrics json csv chrome-json ctf" -- "$cur"))
		return
		;;
	import:--isa)
		COMPREPLY=($(compgen -W "vmx svm" -- "$cur"))
		return
		;;
	serve:-u | serve:--user)
		COMPREPLY=($(compgen -u -- "$cur"))
		return
		;;
	serve:--web.config.file) # exporter-toolkit's web config (YAML)
		_filedir '@(yml|yaml)'
		return
		;;
	*:--vm | *:--vm-name | *:--meta | *:--delay | *:--iterations | *:--top | *:--from | *:--to | \
		*:--speed | *:--duration | *:--max-size | *:--rotate-every | *:--keep | *:--ringbuf | \
		*:--interval | *:--every | *:--top-culprits | *:--listen | *:--cache-ms | *:--refresh | \
		*:--buckets | *:--at | *:--path | *:--cpus | *:--flow | *:--min-impact | *:--vcpu | *:--tid | *:--cgroup | \
		top:--pcpu | query:--pcpu | plot:--pcpu | export:--pcpu | top:-d | top:-n | \
		record:-t | export:-i | export:-e | plot:-i | plot:-b | serve:-l)
		return # a value: nothing to offer
		;;
	esac

	if [[ $cur == -* ]]; then
		local extra=
		[[ $cword -eq 1 ]] && extra="-V --version" # vcpustat's own, besides top's
		COMPREPLY=($(compgen -W "$(_vcpustat_options "$cmd") $extra" -- "$cur"))
		return
	fi
	if [[ $cword -eq 1 ]]; then
		COMPREPLY=($(compgen -W "$_vcpustat_commands help" -- "$cur"))
		return
	fi
	# Positional arguments: the files each command reads.
	case $cmd in
	report | query | check | plot | export) _filedir sht ;;
	replay) _filedir vcap ;;
	esac
} &&
	complete -F _vcpustat vcpustat

# ex: filetype=sh
