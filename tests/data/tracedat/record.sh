#!/bin/bash
# Records the trace.dat test data in the KVM lab (README.md here says how it was run):
#   flock /tmp/vcpustat-heavy.lock tools/kvmlab/run --timeout 300 --scratch DIR -- \
#         tests/data/tracedat/record.sh BUILD/bin/microvm
set -u
S=$KVMLAB_SCRATCH
MV=${1:?usage: record.sh MICROVM (inside the KVM lab)}
EV="-e sched:sched_switch -e sched:sched_wakeup -e sched:sched_wakeup_new -e sched:sched_migrate_task
    -e sched:sched_process_exit -e sched:sched_process_fork -e kvm:kvm_entry -e kvm:kvm_exit
    -e kvm:kvm_userspace_exit -e kvm:kvm_fpu -e kvm:kvm_hypercall -e kvm:kvm_vcpu_wakeup"
uname -r > $S/info.txt
trace-cmd --version 2>&1 | grep version >> $S/info.txt
# the kernel's symbols (4 MB) are of no use to these tests: trace-cmd saves an empty kallsyms
mount --bind /dev/null /proc/kallsyms || echo "kallsyms not hidden" >> $S/info.txt
cd $S
# 1: file version 6 (uncompressed), the local clock
trace-cmd record -q -C local --file-version 6 -o $S/microvm-v6.dat $EV -- $MV --vms 2 --vcpus 2 --duration 0.3 --mix all --chunk-us 1000 > $S/mv-v6.json 2> $S/rec-v6.err || echo "v6 failed $?" >> $S/info.txt
# 2: file version 7, zstd, the mono clock
trace-cmd record -q -C mono --file-version 7 --compression zstd -o $S/microvm-v7.dat $EV -- $MV --vms 2 --vcpus 2 --duration 1 --mix all --chunk-us 1000 > $S/mv-v7.json 2> $S/rec-v7.err || echo "v7 failed $?" >> $S/info.txt
ls -l $S >> $S/info.txt
# then, on the host: the checked-in microvm-v6.dat is the first 5000 records of the v6 recording
#   trace-cmd split -i DIR/microvm-v6.dat -o v6.dat -e 5000    # -> v6.dat.1
