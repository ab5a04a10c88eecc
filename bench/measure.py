#!/usr/bin/env python3
"""One benchmark run and what it cost each end, for bench/run.sh.

  measure.py SERVER_PID CLIENT_ARGV...

Runs the client (tcpscope test --json, or iperf3 -c -J) to its end against
the server whose PID is given, and prints, tab-separated: the receiver's
goodput (bit/s), the bytes received, the client's CPU seconds (its
getrusage, user + system) and the server's over the run (utime + stime of
/proc/PID/stat, in clock ticks of 10 ms: a 5 s run resolves 0.2-0.4%).
CPU per GB is each CPU over the bytes; the server is assumed to serve no
one else meanwhile.
"""
import json, os, resource, subprocess, sys, time

def server_cpu(pid):
    # The fields after the command name, which may hold spaces.
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

pid, argv = int(sys.argv[1]), sys.argv[2:]
r0, s0 = resource.getrusage(resource.RUSAGE_CHILDREN), server_cpu(pid)
out = subprocess.run(argv, stdout=subprocess.PIPE, check=True).stdout
r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
# The server's last reads and its report come just after the client's end.
time.sleep(0.2)
s1 = server_cpu(pid)
d = json.loads(out)
if "summary" in d:  # tcpscope
    rate = sum(x["goodput"] for x in d["summary"])
    got = sum(x["receiver_bytes"] for x in d["summary"])
else:  # iperf3
    rate, got = d["end"]["sum_received"]["bits_per_second"], d["end"]["sum_received"]["bytes"]
ccpu = r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime
print(f"{rate}\t{got}\t{ccpu:.3f}\t{s1 - s0:.3f}")
