# bash completion for microvm(1)                           -*- shell-script -*-
# Installed as <datadir>/bash-completion/completions/microvm. The options are
# those of `microvm --help` (tests/pkg/completion.sh checks it).

_microvm()
{
	local cur prev words cword
	_init_completion || return

	case $prev in
	--json | --ready | --hold)
		_filedir
		return
		;;
	--vms | --vcpus | --busy-us | --idle-us | --chunk-us | --chunk-iters | --pin | --io-thread-us | --msi-us | --duration | -name | --mix)
		return
		;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "--vms --vcpus --busy-us --idle-us --chunk-us --chunk-iters --pin --io-thread-us --msi-us
			--duration -name --json --ready --hold -h --help --mix --irqchip --ipi --address-spaces --nested" -- "$cur"))
	fi
} &&
	complete -F _microvm microvm

# ex: filetype=sh
