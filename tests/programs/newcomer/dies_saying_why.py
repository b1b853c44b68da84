"""A program that cannot start and says why on stdout, then exits: what a JVM does given a
heap it cannot reserve ("heap"), when it cannot start a thread ("threads"; its unified
logging goes to stdout), or any program printing its fatal error there ("plain")."""
import sys
import time

MODE = sys.argv[1]
LINES = {"heap": ["Error occurred during initialization of VM",
                  "Could not reserve enough space for 8388608KB object heap"],
         "threads": ['[0.346s][warning][os,thread] Failed to start thread "Unknown thread" - '
                     "pthread_create failed (EAGAIN) for attributes: stacksize: 1024k"],
         "plain": ["fatal: cannot open weights.bin", "giving up"],
         # more than a pipe holds before it can exit; a line that is not UTF-8 among them
         "long": ["fatal: cannot open weights.bin", "x" * 100_000, "y" * 100_000, "giving up"],
         "binary": ["fatal: cannot open weights.bin", "\udcff\udcfe not text", "giving up"]}[MODE]
sys.stdout.buffer.write("\n".join(LINES).encode("utf-8", "surrogateescape") + b"\n")
sys.stdout.flush()
if MODE == "threads":
    time.sleep(30)  # a JVM runs on after the warning
sys.exit(1)
