#!/usr/bin/env bash
# Install the Debian packages that building and testing vcpustat need.
# Does nothing (and needs no network) when they are all already installed.
set -euo pipefail

pkgs=(
	# build (libc6-dev: the static libc for vcpustat-sync-agent)
	cmake make gcc clang llvm pkg-config bpftool libbpf-dev libelf-dev zlib1g-dev libc6-dev
	# libraries used by user space
	libncurses-dev libmicrohttpd-dev libjansson-dev libzstd-dev libbabeltrace2-dev
	# import of trace-cmd's trace.dat (libtracecmd's pkg-config file needs libtracefs's)
	libtracecmd-dev libtraceevent-dev libtracefs-dev
	# serve --web.config.file: its YAML, TLS (libmicrohttpd's GnuTLS), bcrypt (libxcrypt)
	libyaml-dev libgnutls28-dev libcrypt-dev
	# tests: unit framework, sanitizer/fuzzer runtimes, pty UI test, workloads
	libcap-dev libcriterion-dev libclang-rt-14-dev tmux stress-ng
	# tests of the trace.dat import: `trace-cmd report` prints the text it is compared with
	trace-cmd
	# tests of the CTF export (tests/test_timeline.c): the `babeltrace2` command reads the trace back
	babeltrace2
	# tests of the exporters: promtool and a real Prometheus server, xmllint for the SVG
	# (chromium, for an SVG screenshot, is used when installed but not required)
	prometheus libxml2-utils
	# tests of serve over TLS (tests/test_serve_tls.c): test certificates made at test time, an HTTPS client
	openssl curl
	# the KVM lab (tools/kvmlab, docs/kvmlab.md): QEMU emulating AMD SVM, a static busybox
	# and cpio for its initramfs (its guest kernel is fetched by tools/kvmlab/run with apt-get download,
	# through apt of its own that trusts Debian's archive keys; modules come as .ko, .ko.xz or .ko.zst)
	qemu-system-x86 busybox-static cpio debian-archive-keyring xz-utils zstd
	# shipping (docs/install.md): man pages (scdoc renders them, man-db checks
	# them), bash completion, the Debian package (./build.sh deb) and its checks
	scdoc man-db bash-completion dpkg-dev debhelper fakeroot lintian systemd
	# the KVM lab's peer (kvmlab/perf_kvm_stat_...) and bench/kvmlab-overhead.sh: perf kvm stat
	# (Debian 12's linux-perf is perf 6.1, an ELF binary, no wrapper; it runs in the lab's 6.1 guest)
	linux-perf
	# bench/kvmlab-overhead.sh's third peer: bpftrace counting kvm:kvm_exit by reason
	bpftrace
)

missing=()
for p in "${pkgs[@]}"; do
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	[ "$st" = "install ok installed" ] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "deps: missing Debian packages: ${missing[*]}" >&2
	echo "deps: run as root (or: sudo apt-get install ${missing[*]})" >&2
	exit 1
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y -qq -o Dpkg::Use-Pty=0 --no-install-recommends "${missing[@]}"; then
	apt-get update -qq
	apt-get install -y -qq -o Dpkg::Use-Pty=0 --no-install-recommends "${missing[@]}"
fi
