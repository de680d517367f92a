# The spawn helper in Perl (see spawner.ts and docs/spawning.md): a small process started once per
# orchestrator that starts every step's process for it. Used when `perl` is on PATH and the kernel has pidfd_open
# (Linux >= 5.3); spawn-helper.cjs (Node) is the fallback. A fork and its copy-on-write faults are most of what a spawn
# costs the helper, and they grow with its memory: about 8 MB resident (2.5 MB anonymous) here against a Node process's
# 40 MB (12 MB). One core module (POSIX): perl-base suffices, and every module more is more memory to fork.
#
# The protocol (spawner.ts encodes it; spawn-helper.cjs speaks the same):
#   -> "<bytes>\n" then <bytes> bytes: NUL-separated fields
#        id, file, cwd, log, cookie ("" for none), sweepAgainMs ("" for none), dieWithHelper ("1" or ""),
#        sandboxInit ("1" or ""), errLog ("" for none), stdin ("" for none), relay ("1", "pipe" or ""), netstack (the path of
#        slirp4netns, "" for none), cgroup (a cgroup.procs file the child writes its pid to before its exec, "" for
#        none; refused, the spawn fails), then three counted lists: <n> args..., <n> env entries "NAME=value"..., <n> files...
#   -> "hold <id>\n", "release <id>\n"     a relayed step's output is not read (nothing is written into its log, the
#                                            step blocks once the relay is full) from "held" until the release; an exit
#                                            that comes meanwhile is reported after the release (see log-cap.ts)
#   <- "<id> held\n"                        the reply to a hold (also for an id that is not running)
#   <- "ready perl <version>\n"             first, once (or "unsupported <reason>\n" and exit: the Node helper is used)
#   <- "<id> pid <pid> <startTime>\n"       it runs: its own session and process group, stdin /dev/null (or the
#                                            stdin file, read-only), stdout and stderr appended to the log (stderr to
#                                            errLog when given; with relay, a socket relayed to the log, below),
#                                            `files` read-only as fds 3, 4, ...
#   <- "<id> init <pid> <startTime>\n"      sandboxInit only, after "pid": the sandbox's init (see below) was found and
#                                            is held; the orchestrator records it for crash recovery (run/reconcile.ts)
#   <- "<id> error <message>\n"             it could not be started (the OS error, worded as Node words it)
#   <- "<id> exit <code|-> <signal|->\n"    it ended (signal as a number); its group was killed first and, when a
#                                            cookie was given, every process carrying the cookie too (and again
#                                            at least sweepAgainMs later, on a whole second of the clock)
# sandboxInit: the child is bubblewrap run with `--info-fd <3 + number of files>`; the helper makes that fd the write
# end of a pipe and reads bwrap's JSON from it ({"child-pid": N}: the sandbox's init, PID 1 of its PID namespace). It
# takes a pidfd of the init at once (when N is bwrap's child, or an orphaned namespace init reparented to this helper)
# and, when bwrap exits, SIGKILLs the init through that pidfd (pidfd_send_signal) and reports the exit only once the
# init has exited, which is after every process of its namespace is gone: a step that traced its init and cleared its
# parent-death signal cannot outlive its bwrap. bwrap closes the info fd in its child before anything of the step
# runs, so no step can write to it; the pid is written before the step starts (docs/containment.md).
# The helper is a child subreaper (prctl PR_SET_CHILD_SUBREAPER, x86_64 and aarch64): orphaned inits are reparented to
# it and reaped (waitpid(-1), keeping the status of its own children for their exit replies), not left as zombies.
# relay: the child's stdout (and stderr unless errLog) is one end of a unix socket pair, never the log file: a process
# of the step that opens /proc/<pid>/fd/1 of the step's engine gets ENXIO (a file, or a pipe, would be opened again and
# written). The helper appends what arrives on its end to the log as it comes, one read of at most 64 KiB per turn, and
# before it reports the exit (sandboxed: after the init, so every writer, is gone) reads what is left, then closes its
# end: a writer that outlived the step gets EPIPE, nothing lands in the log after the exit report. relay "pipe": the
# same through a pipe, which a process of the step may open again through /proc/<pid>/fd/1 (/dev/stdout): the output
# of a capped step (log-cap.ts), which only needs this helper to be the log's one writer.
# netstack (with sandboxInit): bwrap also runs with `--block-fd <4 + number of files>` and `--unshare-net`; the helper
# makes that fd the read end of a pipe. Once it holds the init, it starts slirp4netns on the init's network namespace
# (`--configure`: tap0 10.0.2.100/24, the host's loopback as 10.0.2.2), in its own session, with a parent-death
# signal (SIGKILL), its ready fd and exit fd pipes of the helper's, and the user namespace that owns the network
# namespace (NS_GET_USERNS: unprivileged, bwrap's `--dev` makes it nest a second user namespace in which the step runs,
# and only the outer one may enter the network namespace). When slirp4netns says it is ready the helper writes one
# byte to the block fd and the step starts; if it ends before that, the step is killed and a line saying so is
# appended to its log. When the step's bwrap exits, and when the helper ends, slirp4netns is killed; the helper's own
# death closes the exit fd and fires the parent-death signal, so it never outlives its step.
# When stdin ends or the parent changes (the orchestrator is gone) the helper kills the groups of the `dieWithHelper`
# steps and exits.
use strict;
use warnings;
use POSIX ();

my $PIDFD_OPEN = 434;    # the same number on every architecture (the unified syscall table, Linux >= 5.3)
my $PIDFD_SEND_SIGNAL = 424;    # likewise (Linux >= 5.1)
my %PRCTL = (x86_64 => 157, aarch64 => 167);    # prctl's number differs per architecture (asm/unistd.h)
my $PR_SET_CHILD_SUBREAPER = 36;
my $PR_SET_PDEATHSIG = 1;
my $NS_GET_USERNS = 0xb701;    # ioctl on a namespace's fd: an fd of the user namespace owning it (linux/nsfs.h)
my $COOKIE_VAR = 'VERDICT_STEP_COOKIE';

$SIG{PIPE} = 'IGNORE';    # a closed stdout is the orchestrator gone: seen as a failed write, not a signal
my $out = '';             # replies of this turn, written at its end
my $parent = getppid();
my %running;              # pidfd => { id, pid, cookie, again, info (handle), buf, init ({ fd, pid }) }
my %boxed;                # pid => 1: process groups that end with the helper
my %own;                  # pid => its step: the children this helper started and has not reaped
my %reaped;               # pid => wait status: own children reaped by reap_strays before their pidfd was read
my %infos;                # fileno => step: bwrap --info-fd pipes not yet read to the end
my %relays;               # fileno => step: relayed outputs (the helper's end of the socket) not yet at their end
my %nets;                 # fileno => step: slirp4netns ready pipes not yet read
my %stacks;               # pid => 1: running slirp4netns processes (killed when the helper ends)
my $AF_UNIX = 1;          # Linux's numbers (sys/socket.h), as the syscall numbers above: no Socket module
my $SOCK_STREAM = 1;
my $RELAY_CHUNK = 65536;     # bytes read from a relayed output at a time
my $F_GETPIPE_SZ = 1032;     # fcntl command (linux/fcntl.h: F_LINUX_SPECIFIC_BASE + 8)
my ($SOL_SOCKET, $SO_SNDBUF, $SO_SNDBUFFORCE) = (1, 7, 32);    # Linux's numbers (asm-generic/socket.h)
my $RELAY_SOCKET_BYTES = 4194304;    # a relay socket's send buffer (and, as root, a relay pipe's capacity) asked for
my $F_SETPIPE_SZ = 1031;     # fcntl command (linux/fcntl.h: F_LINUX_SPECIFIC_BASE + 7)
my $RELAY_PIPE_BYTES = 1048576;    # a relay pipe's capacity asked for unprivileged (the most, /proc/sys/fs/pipe-max-size)
my %steps;                # id => step: started and its exit not yet reported (hold and release name them so)
my %ending;               # init pidfd => [step, exit line]: bwrap has exited, its init is killed, not yet gone
my @later;                # [due (s), cookie]: second cookie sweeps

# Descriptors the orchestrator itself inherited without close-on-exec (from a terminal, a CI runner) would reach every
# step through this process: they are closed once, here.
if (opendir(my $fds, '/proc/self/fd')) {
  my @inherited = grep { /^[0-9]+$/ && $_ > 2 } readdir $fds;
  closedir $fds;
  for my $fd (@inherited) {
    open(my $info, '<', "/proc/self/fdinfo/$fd") or next;
    my ($flags) = join('', <$info>) =~ /^flags:\s*([0-7]+)/m;
    close $info;
    POSIX::close($fd) if defined $flags && !(oct($flags) & 02000000);    # O_CLOEXEC
  }
}
open(my $devnull, '<', '/dev/null') or die "verdict spawn helper: /dev/null: $!\n";
open(my $devnull_w, '>', '/dev/null') or die "verdict spawn helper: /dev/null: $!\n";

if ($^O ne 'linux') {
  syswrite(STDOUT, "unsupported not Linux ($^O): no pidfd_open\n");
  exit 0;
}
my $probe = syscall($PIDFD_OPEN, $$ + 0, 0);
if ($probe < 0) {
  syswrite(STDOUT, "unsupported pidfd_open: $!\n");
  exit 0;
}
POSIX::close($probe);
# A subreaper: an orphaned descendant (a sandbox's init whose bwrap exited) becomes this helper's child, reaped here
# instead of a zombie under a PID 1 that may never reap it. Skipped on other architectures (prctl's number unknown).
my $machine = (POSIX::uname())[4];
syscall($PRCTL{$machine}, $PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) if exists $PRCTL{$machine};
reply("ready perl $^V");
flush_out();

# The errno name of $n (ENOENT), as Node names OS errors.
sub errno_name {
  my ($n) = @_;
  local $! = $n;
  for my $name (keys %!) {
    return $name if $!{$name};
  }
  return "E$n";
}

# An OS error worded as Node's fs functions word it: "ENOENT: no such file or directory, open '/x'".
sub fs_error {
  my ($n, $syscall, $path) = @_;
  local $! = $n;
  return errno_name($n) . ': ' . lcfirst("$!") . ", $syscall '$path'";
}

sub reply { $out .= "$_[0]\n" }

# An error reply: one line whatever the message holds (a path may hold a newline).
sub fail {
  my ($id, $message) = @_;
  $message =~ s/\n/\\n/g;
  reply("$id error $message");
}

sub flush_out {
  while (length $out) {
    my $n = syswrite(STDOUT, $out);
    if (!defined $n) {
      next if $!{EINTR};
      orphaned();
    }
    substr($out, 0, $n) = '';
  }
}

# /proc/<pid>/stat field 22 (the start time in clock ticks since boot), or "-".
sub start_time {
  my ($pid) = @_;
  open(my $fh, '<', "/proc/$pid/stat") or return '-';
  my $stat = <$fh>;
  close $fh;
  return '-' unless defined $stat;
  my @f = split / /, substr($stat, rindex($stat, ')') + 2);
  return $f[19] // '-';
}

sub kill_group { kill 'KILL', -$_[0] }

# /proc/<pid>/stat's parent pid (field 4), or -1. Raw descriptors: one read.
sub parent_of {
  my ($pid) = @_;
  my $fd = POSIX::open("/proc/$pid/stat", POSIX::O_RDONLY()) // return -1;
  my $n = POSIX::read($fd, my $stat, 1024);
  POSIX::close($fd);
  return -1 unless $n;
  return (split / /, substr($stat, rindex($stat, ')') + 2), 3)[1] // -1;
}

# True when <pid> is the init (PID 1) of a PID namespace below this helper's: /proc/<pid>/status's NSpid ends in 1.
sub namespace_init {
  my ($pid) = @_;
  open(my $fh, '<', "/proc/$pid/status") or return 0;
  while (<$fh>) {
    next unless /^NSpid:\s*(.*)/;
    my @ns = split ' ', $1;
    return @ns >= 2 && $ns[-1] == 1;
  }
  return 0;
}

# The sandbox's init named by bwrap (--info-fd): a pidfd of it, held from now on, so a later kill never reaches a
# reused pid. Taken only when the process under that pid is bwrap's child (bwrap still running, the init not reaped)
# or, bwrap gone, an orphaned PID-namespace init reparented to this helper (never one of the helper's own steps).
sub adopt_init {
  my ($s, $pid) = @_;
  return if $s->{init} || $pid <= 1 || $pid == $$ || $own{$pid};
  my $fd = syscall($PIDFD_OPEN, $pid + 0, 0);
  return if $fd < 0;
  my $ppid = parent_of($pid);
  if ($ppid == $s->{pid} || ($ppid == $$ && namespace_init($pid))) {
    $s->{init} = { fd => $fd, pid => $pid };
    reply("$s->{id} init $pid " . start_time($pid));
  } else {
    POSIX::close($fd);
  }
}

# Reads what bwrap wrote on the info pipe (non-blocking), taking the init's pid as soon as it is there; closes the pipe
# at its end only (bwrap writes more after the pid and would die of SIGPIPE). Once the pid is taken the pipe is no
# longer watched (fewer turns of the loop): the rest of bwrap's JSON waits in it until bwrap exits.
sub read_info {
  my ($s) = @_;
  my $fh = $s->{info} // return;
  for (;;) {
    my $n = sysread($fh, my $chunk, 4096);
    if (!defined $n) {
      next if $!{EINTR};
      return if $!{EAGAIN};
    }
    if (!$n) {
      delete $infos{ fileno $fh };
      close $fh;
      delete $s->{info};
      return;
    }
    next if defined $s->{seen};
    $s->{buf} .= $chunk;
    if ($s->{buf} =~ /"child-pid"\s*:\s*([0-9]+)/) {
      $s->{seen} = $1;
      adopt_init($s, $1);
      delete $infos{ fileno $fh };
      if ($s->{block}) {
        if ($s->{init}) { start_net($s, $s->{seen}) }
        else { net_failed($s, "its sandbox's init (pid $s->{seen}) could not be held") }
      }
      return;
    }
    $s->{seen} = '' if length $s->{buf} > 4096;    # not bwrap's: ignored
  }
}

# Appends what step $s's relayed output holds to its log: one read (the select loop's turn), or, with $drain, reads
# until nothing is left, at most twice what the relay can hold ($s->{room}): all the step wrote before it ended, while a
# writer that outlived the step cannot keep the helper here. (A fixed 4 MiB once lost the end of a flood: a socket asked
# for a 4 MiB send buffer holds 8 MiB, as the kernel doubles it.) At the socket's end (every writer gone) it is closed.
# A write to the log that fails (a full disk) loses that chunk, as the step's own write would have failed; the step goes on.
sub relay_out {
  my ($s, $drain) = @_;
  my $fh = $s->{relay} // return;
  for (my $read = 0; !$drain || $read < 2 * $s->{room}; ) {
    my $n = sysread($fh, my $chunk, $RELAY_CHUNK);
    if (!defined $n) {
      next if $!{EINTR};
      return if $!{EAGAIN};
    }
    if (!$n) {
      relay_close($s);
      return;
    }
    $read += $n;
    for (my $at = 0; $at < $n;) {
      my $w = syswrite($s->{log}, $chunk, $n - $at, $at);
      if (!defined $w) {
        next if $!{EINTR};
        last;
      }
      $at += $w;
    }
    return unless $drain;
  }
}

# Step $s's relay is over: what is left is read (what the step wrote before it ended is all in the socket), then the
# helper's end and the log are closed. Called just before its exit is reported.
sub relay_finish {
  my ($s) = @_;
  return unless $s->{relay};
  relay_out($s, 1);
  relay_close($s);
}

# Step $s has ended ($line: its exit reply): its relay is read to its end, then the exit is reported; while the
# orchestrator holds its log, only once it releases it.
sub report_exit {
  my ($s, $line) = @_;
  if ($s->{held}) {
    $s->{exit_line} = $line;
    return;
  }
  relay_finish($s);
  delete $steps{ $s->{id} };
  reply($line);
}

# "hold ID": step ID's relayed output is no longer read, so nothing is written into its log, until "release ID"; the
# reply "ID held" says so. An ID not running (its exit already reported) is held at once: nothing writes its log.
sub hold {
  my ($id) = @_;
  my $s = $steps{$id};
  if ($s) {
    $s->{held} = 1;
    delete $relays{ fileno $s->{relay} } if $s->{relay};
  }
  reply("$id held");
}

# "release ID": its relayed output is read again, and an exit that came while it was held is reported.
sub release {
  my $s = $steps{ $_[0] } // return;
  return unless delete $s->{held};
  $relays{ fileno $s->{relay} } = $s if $s->{relay};
  report_exit($s, delete $s->{exit_line}) if exists $s->{exit_line};
}

sub relay_close {
  my ($s) = @_;
  my $fh = delete $s->{relay} // return;
  delete $relays{ fileno $fh };
  close $fh;
  close delete $s->{log};
}

# The init of step $s has exited: its pidfd is closed and, reparented to this helper (bwrap exited first), it is reaped
# here; else bwrap reaped it. A pid this helper started is never waited for here.
sub init_gone {
  my ($s) = @_;
  POSIX::close($s->{init}{fd});
  waitpid($s->{init}{pid}, POSIX::WNOHANG()) unless $own{ $s->{init}{pid} };
}

# Children this helper did not start (orphans reparented to it as a subreaper) are reaped; its own children's
# statuses are kept for their exit replies.
sub reap_strays {
  for (;;) {
    my $pid = waitpid(-1, POSIX::WNOHANG());
    last if $pid <= 0;
    $reaped{$pid} = $? if $own{$pid};
  }
}

# SIGKILL to every process whose environment holds one of the cookies: one pass over /proc for all of them. Raw
# descriptors (POSIX::open/read): three system calls per process instead of a PerlIO handle's eight; one read returns
# the whole environment when it fits the buffer.
my $self = $$;
sub kill_by_cookies {
  my @needles = map { "$COOKIE_VAR=$_\0" } @_;
  opendir(my $dir, '/proc') or return;
  for my $entry (readdir $dir) {
    next unless $entry =~ /^[0-9]+$/ && $entry != $self;
    my $fd = POSIX::open("/proc/$entry/environ", POSIX::O_RDONLY()) // next;
    my $environ = '';
    my $n = POSIX::read($fd, $environ, 262144) // 0;
    while ($n == 262144) {
      $n = POSIX::read($fd, my $more, 262144) // 0;
      $environ .= $more if $n;
    }
    POSIX::close($fd);
    for my $needle (@needles) {
      if (index($environ, $needle) >= 0) {
        kill 'KILL', $entry;
        last;
      }
    }
  }
  closedir $dir;
}

# Makes the handles of @$sources the fds 0, 1, 2, 3... of this (forked) process: each first moved above every target
# and source (F_DUPFD takes the lowest free fd from there), so no dup2 overwrites a source not yet moved. The moved
# copies are closed again. False when a dup failed.
sub place_fds {
  my ($sources) = @_;
  my $above = @$sources;
  for (@$sources) { $above = fileno($_) + 1 if fileno($_) >= $above }
  my @high = map { fcntl($_, POSIX::F_DUPFD(), $above) } @$sources;
  my $ok = 1;
  for my $i (0 .. $#high) {
    $ok &&= defined $high[$i] && defined POSIX::dup2($high[$i], $i);
  }
  for (@high) { POSIX::close($_) if defined }
  return $ok;
}

# Waits (at most 3 s, polling every ms) until the loopback of <pid>'s network namespace is up with its address, which
# bwrap's child sets up right after it starts (an address, then the link up). slirp4netns --configure brings the
# loopback up too: before bwrap has added its address, the kernel adds 127.0.0.1 itself and bwrap's own add fails
# ("bwrap: loopback: Failed RTM_NEWADDR", the step exits 1: test/bench/netstack.bench.ts hit it within its first 70 steps in each of three runs). Up, the namespace's
# routing table holds the loopback's broadcast route.
sub loopback_up {
  my ($pid) = @_;
  for (1 .. 3000) {
    if (open(my $fh, '<', "/proc/$pid/net/fib_trie")) {
      local $/;
      my $t = <$fh> // '';
      close $fh;
      return if index($t, 'BROADCAST') >= 0;
    }
    select(undef, undef, undef, 0.001);
  }
}

# Starts slirp4netns on the network namespace of step $s's sandbox init <pid> (see the header: netstack).
sub start_net {
  my ($s, $pid) = @_;
  my $userns;
  if (open(my $net, '<', "/proc/$pid/ns/net")) {
    my $fd = ioctl($net, $NS_GET_USERNS, 0);
    close $net;
    open($userns, '<&=', $fd + 0) if defined $fd;
  }
  my ($ready_r, $ready_w, $exit_r, $exit_w);
  if (!pipe($ready_r, $ready_w) || !pipe($exit_r, $exit_w)) {
    return net_failed($s, 'pipe: ' . errno_name($! + 0));
  }
  my $helper = $$;
  my $npid = fork;
  if (defined $npid && $npid == 0) {
    no warnings 'exec';
    $SIG{PIPE} = 'DEFAULT';
    my $machine = (POSIX::uname())[4];
    syscall($PRCTL{$machine}, $PR_SET_PDEATHSIG, 9, 0, 0, 0) if exists $PRCTL{$machine};
    POSIX::_exit(1) if getppid() != $helper;
    POSIX::setsid();
    loopback_up($pid);
    eval {
      if (place_fds([ $devnull, $devnull_w, $devnull_w, $ready_w, $exit_r, ($userns ? $userns : ()) ])) {
        %ENV = (PATH => '/usr/sbin:/usr/bin:/sbin:/bin');
        exec { $s->{netstack} } 'slirp4netns', '--configure', '--mtu=65520', '--ready-fd=3', '--exit-fd=4', ($userns ? ('--userns-path=/proc/self/fd/5') : ()), $pid, 'tap0';
      }
    };
    POSIX::_exit(127);
  }
  close $ready_w;
  close $exit_r;
  close $userns if $userns;
  return net_failed($s, 'fork: ' . errno_name($! + 0)) unless defined $npid;
  my $flags = fcntl($ready_r, POSIX::F_GETFL(), 0);
  fcntl($ready_r, POSIX::F_SETFL(), $flags | POSIX::O_NONBLOCK());
  $stacks{$npid} = 1;
  $s->{net} = { pid => $npid, ready => $ready_r, exit => $exit_w };
  $nets{ fileno $ready_r } = $s;
}

# slirp4netns of step $s wrote on its ready pipe, or closed it: ready, the step starts (one byte on its block fd);
# closed without a byte, it failed: the step is killed.
sub net_ready {
  my ($s) = @_;
  my $n = $s->{net} // return;
  my $got = sysread($n->{ready}, my $byte, 1);
  return if !defined $got && ($!{EAGAIN} || $!{EINTR});
  delete $nets{ fileno $n->{ready} };
  close delete $n->{ready};
  if ($got) {
    syswrite($s->{block}, '1');
    close delete $s->{block};
    return;
  }
  my $pid = $n->{pid};
  my $status = waitpid($pid, 0) == $pid ? $? : -1;
  delete $stacks{$pid};
  net_failed($s, "slirp4netns exited before the network was up (" . ($status < 0 ? 'status unknown' : ($status & 127) ? 'signal ' . ($status & 127) : 'exit ' . ($status >> 8)) . ')');
}

# Step $s cannot get its network: its sandbox is killed before the step's command runs (the block fd still holds it)
# and a line saying why is appended to its log.
sub net_failed {
  my ($s, $why) = @_;
  kill_group($s->{pid});
  syscall($PIDFD_SEND_SIGNAL, $s->{init}{fd}, 9, 0, 0) if $s->{init};
  if (open(my $fh, '>>', $s->{logpath})) {
    print $fh "verdict: the step's own network could not be set up: $why; the step was stopped\n";
    close $fh;
  }
  close delete $s->{block} if $s->{block};
}

# Step $s ended: its slirp4netns is ended (its exit fd closed, then SIGKILL; reaped by reap_strays).
sub net_end {
  my ($s) = @_;
  close delete $s->{block} if $s->{block};
  my $n = delete $s->{net} // return;
  if ($n->{ready}) {
    delete $nets{ fileno $n->{ready} };
    close $n->{ready};
  }
  close $n->{exit};
  kill 'KILL', $n->{pid};
  delete $stacks{ $n->{pid} };
}

# In the child, after fork: never returns. $sources are the handles that become fds 0, 1, 2, 3... On failure it tells
# the parent (errno and what failed) through $report.
sub child {
  no warnings 'exec';    # a failed exec is reported to the parent, not printed into the step's log
  my ($report, $file, $cwd, $args, $env, $sources, $cgroup) = @_;
  my $stage = 'setsid';
  $SIG{PIPE} = 'DEFAULT';
  if (POSIX::setsid() >= 0) {
    # The sources move above every target and every source first (F_DUPFD takes the lowest free fd from there), so no
    # dup2 overwrites a source not yet moved. The moved copies lack close-on-exec: they are closed before the exec.
    my $above = @$sources;
    for (@$sources) { $above = fileno($_) + 1 if fileno($_) >= $above }
    my @high = map { fcntl($_, POSIX::F_DUPFD(), $above) } @$sources;
    $stage = 'dup2';
    my $ok = 1;
    for my $i (0 .. $#high) {
      $ok &&= defined $high[$i] && defined POSIX::dup2($high[$i], $i);
    }
    for (@high) { POSIX::close($_) if defined }
    if ($ok) {
      $stage = 'chdir';
      if (chdir $cwd) {
        $stage = 'cgroup';
        if (!length $cgroup || join_cgroup($cgroup)) {
          %ENV = ();
          for (@$env) {
            my $eq = index($_, '=');
            $ENV{ substr($_, 0, $eq) } = substr($_, $eq + 1) if $eq > 0;
          }
          $stage = 'exec';
          exec { $file } $file, @$args;
        }
      }
    }
  }
  syswrite($report, ($! + 0) . " $stage");
  POSIX::_exit(127);
}

# In the child, after fork: writes its pid to the cgroup.procs file $_[0] (memory-cap.ts), so that what it execs runs
# in that cgroup. False with $! set when the file cannot be opened or the kernel refuses the write.
sub join_cgroup {
  open(my $fh, '>', $_[0]) or return 0;
  defined syswrite($fh, "$$\n") or return 0;
  return close($fh);
}

sub start {
  my @f = split /\0/, $_[0], -1;
  my ($id, $file, $cwd, $log, $cookie, $again, $boxed, $sandbox_init, $err, $stdin, $relay, $netstack, $cgroup) = splice(@f, 0, 13);
  my @args = splice(@f, 0, shift @f);
  my @env = splice(@f, 0, shift @f);
  my @files = splice(@f, 0, shift @f);
  my @handles;
  for my $want ([ '>>', $log ], [ '>>', $err ], [ '<', $stdin ], map { [ '<', $_ ] } @files) {
    my $fh;
    if (!length $want->[1]) {
      push @handles, undef;    # errLog or stdin not given
      next;
    }
    if (!open($fh, $want->[0], $want->[1])) {
      return fail($id, fs_error($! + 0, 'open', $want->[1]));
    }
    push @handles, $fh;
  }
  my ($logfh, $errfh, $infh, @filefhs) = @handles;
  # relay: the child writes into one end of a socket pair (one way: shut for reading on its side, for writing on ours);
  # the helper's end is read without blocking and appended to the log.
  # relay "pipe": a pipe instead (opening /proc/<pid>/fd/1, i.e. /dev/stdout, works and writes into the relay).
  my ($relay_r, $relay_w);
  if ($relay eq 'pipe') {
    if (!pipe($relay_r, $relay_w)) {
      return fail($id, "spawn $file: pipe: " . errno_name($! + 0));
    }
    # Room for what the step writes at its end (below, the socket's): as root past /proc/sys/fs/pipe-max-size, else up
    # to it; the default where both are refused.
    fcntl($relay_r, $F_SETPIPE_SZ, $RELAY_SOCKET_BYTES) or fcntl($relay_r, $F_SETPIPE_SZ, $RELAY_PIPE_BYTES);
  } elsif ($relay) {
    if (!socketpair($relay_r, $relay_w, $AF_UNIX, $SOCK_STREAM, 0)) {
      return fail($id, "spawn $file: socketpair: " . errno_name($! + 0));
    }
    shutdown($relay_r, 1);
    shutdown($relay_w, 0);
    # Room for what the step writes at its end: a Node program's writes to a socket (or pipe) that is full are queued
    # in the program, and lost when it calls process.exit() (an engine's last event). As root past net.core.wmem_max
    # (SO_SNDBUFFORCE), else up to it (SO_SNDBUF).
    setsockopt($relay_w, $SOL_SOCKET, $SO_SNDBUFFORCE, $RELAY_SOCKET_BYTES) or setsockopt($relay_w, $SOL_SOCKET, $SO_SNDBUF, $RELAY_SOCKET_BYTES);
  }
  my $room = 0;
  if ($relay_r) {
    my $flags = fcntl($relay_r, POSIX::F_GETFL(), 0);
    fcntl($relay_r, POSIX::F_SETFL(), $flags | POSIX::O_NONBLOCK());
    # What the relay can hold, bytes: a socket's send buffer as the kernel reports it (twice what was asked), a pipe's
    # capacity; 1 MiB where neither answers.
    my $sndbuf = $relay eq 'pipe' ? undef : getsockopt($relay_w, $SOL_SOCKET, $SO_SNDBUF);
    $room = $relay eq 'pipe' ? fcntl($relay_r, $F_GETPIPE_SZ, 0) : defined $sndbuf ? unpack('i', $sndbuf) : 0;
    $room = 16 * $RELAY_CHUNK unless $room && $room > 0;
  }
  my $outfh = $relay ? $relay_w : $logfh;
  # bwrap's --info-fd: the write end becomes the child's fd after its files; the read end (close-on-exec, as every
  # descriptor perl opens above 2) is read without blocking.
  my ($info, $info_w);
  if ($sandbox_init) {
    if (!pipe($info, $info_w)) {
      return fail($id, "spawn $file: pipe: " . errno_name($! + 0));
    }
    my $flags = fcntl($info, POSIX::F_GETFL(), 0);
    fcntl($info, POSIX::F_SETFL(), $flags | POSIX::O_NONBLOCK());
    push @filefhs, $info_w;
  }
  # netstack: bwrap's --block-fd, the fd after the info fd; the helper keeps the write end until the network is up.
  my ($block_r, $block_w);
  if ($sandbox_init && length $netstack) {
    if (!pipe($block_r, $block_w)) {
      return fail($id, "spawn $file: pipe: " . errno_name($! + 0));
    }
    push @filefhs, $block_r;
  }
  my $report;
  my $pid;
  if (pipe(my $read, $report)) {
    $pid = fork;
    if (defined $pid && $pid == 0) {
      close $read;
      child($report, $file, $cwd, \@args, \@env, [ $infh // $devnull, $outfh, $errfh // $outfh, @filefhs ], $cgroup);
    }
    close $report;
    close $info_w if $info_w;
    close $block_r if $block_r;
    close $relay_w if $relay_w;
    if (defined $pid) {
      # Blocks until the child has exec'd (the pipe closes on exec) or failed (it writes why): as libuv does.
      my $failed = '';
      1 while sysread($read, $failed, 64, length $failed);
      if (length $failed) {
        waitpid($pid, 0);
        my ($errno, $stage) = split / /, $failed;
        return fail($id, "spawn $file: cannot join the memory cgroup ($cgroup): " . errno_name($errno)) if $stage eq 'cgroup';
        return fail($id, $stage eq 'exec' || $stage eq 'chdir' ? "spawn $file " . errno_name($errno) : "spawn $file: $stage: " . errno_name($errno));
      }
    }
  }
  return fail($id, "spawn $file: " . errno_name($! + 0)) unless defined $pid;
  my $pidfd = syscall($PIDFD_OPEN, $pid + 0, 0);
  if ($pidfd < 0) {
    # Cannot happen for our own unreaped child; if it does, the step must not run unwatched.
    kill_group($pid);
    waitpid($pid, 0);
    return fail($id, "spawn $file: pidfd_open: " . errno_name($! + 0));
  }
  my $s = { id => $id, pid => $pid, cookie => $cookie, again => $again, logpath => $log };
  if ($block_w) {
    $s->{block} = $block_w;
    $s->{netstack} = $netstack;
  }
  $running{$pidfd} = $s;
  $own{$pid} = $s;
  $steps{$id} = $s;
  if ($info) {
    $s->{info} = $info;
    $s->{buf} = '';
    $infos{ fileno $info } = $s;
  }
  if ($relay_r) {
    $s->{relay} = $relay_r;
    $s->{log} = $logfh;
    $s->{room} = $room;
    $relays{ fileno $relay_r } = $s;
  }
  $boxed{$pid} = 1 if $boxed;
  reply("$id pid $pid " . start_time($pid));
}

# The orchestrator is gone: so is the helper, and with it every sandboxed step (bwrap's --die-with-parent would end
# them when the helper exits, but not one still starting). Unsandboxed steps are left for the next start's reconcile.
sub orphaned {
  kill_group($_) for keys %boxed;
  kill 'KILL', $_ for keys %stacks;
  for my $s (values %own) {
    syscall($PIDFD_SEND_SIGNAL, $s->{init}{fd}, 9, 0, 0) if $s->{init};
  }
  POSIX::_exit(0);
}

my $in = '';
for (;;) {
  my $rin = '';
  vec($rin, 0, 1) = 1;
  vec($rin, $_, 1) = 1 for keys %running, keys %infos, keys %ending, keys %relays, keys %nets;
  my $now = time;
  my $wait = 1;    # the parent is looked at least once a second
  for (@later) {
    my $d = $_->[0] - $now;
    $wait = $d < 0 ? 0 : $d if $d < $wait;
  }
  my $ready = select(my $rout = $rin, undef, undef, $wait);
  if ($ready < 0) {
    next if $!{EINTR};
    die "verdict spawn helper: select: $!\n";
  }
  orphaned() if getppid() != $parent;
  my @sweep;
  my @reports;
  if ($ready > 0) {
    for my $fd (keys %infos) {
      read_info($infos{$fd}) if vec($rout, $fd, 1);
    }
    for my $fd (keys %nets) {
      net_ready($nets{$fd}) if vec($rout, $fd, 1) && $nets{$fd};
    }
    for my $fd (keys %relays) {
      relay_out($relays{$fd}, 0) if vec($rout, $fd, 1) && $relays{$fd};
    }
    for my $fd (keys %running) {
      next unless vec($rout, $fd, 1);
      my $s = delete $running{$fd};
      POSIX::close($fd);
      my $status;
      if (exists $reaped{ $s->{pid} }) {
        $status = delete $reaped{ $s->{pid} };
      } else {
        waitpid($s->{pid}, 0);
        $status = $?;
      }
      delete $own{ $s->{pid} };
      delete $boxed{ $s->{pid} };
      kill_group($s->{pid});
      net_end($s);
      my $line = "$s->{id} exit " . (($status & 127) ? '- ' . ($status & 127) : ($status >> 8) . ' -');
      if ($s->{info}) {
        # bwrap is gone, and so is every writer of the pipe: what it wrote is read to the end now.
        read_info($s);
        if ($s->{info}) {
          delete $infos{ fileno $s->{info} };
          close delete $s->{info};
        }
      }
      if ($s->{init}) {
        # The init (PID 1 of the sandbox) is killed, and the exit reported once it is gone (its pidfd readable): the
        # kernel has then killed and reaped every process of its namespace. Mostly it is gone already (bwrap's
        # --die-with-parent killed it as bwrap exited): then in this same turn.
        my $ifd = $s->{init}{fd};
        syscall($PIDFD_SEND_SIGNAL, $ifd, 9, 0, 0);
        my $gone = '';
        vec($gone, $ifd, 1) = 1;
        if (select($gone, undef, undef, 0) > 0) {
          init_gone($s);
        } else {
          $ending{$ifd} = [ $s, $line ];
          next;
        }
      }
      if ($s->{cookie} eq '') {
        report_exit($s, $line);
        next;
      }
      push @sweep, $s->{cookie};
      push @reports, [ $s, $line ];
      # On a whole second of the clock, at least `again` ms from now: the second sweeps of steps that ended within the
      # same second are one pass.
      push @later, [ time + POSIX::ceil($s->{again} / 1000) + 1, $s->{cookie} ] if length $s->{again};
    }
    for my $fd (keys %ending) {
      next unless vec($rout, $fd, 1);
      my ($s, $line) = @{ delete $ending{$fd} };
      init_gone($s);
      report_exit($s, $line);
    }
    if (vec($rout, 0, 1)) {
      my $n = sysread(STDIN, $in, 262144, length $in);
      orphaned() if defined $n ? $n == 0 : !$!{EINTR};
      for (;;) {
        my $nl = index($in, "\n");
        last if $nl < 0;
        my $len = substr($in, 0, $nl);
        if ($len =~ /^(hold|release) (\d+)$/) {
          $1 eq 'hold' ? hold($2) : release($2);
          substr($in, 0, $nl + 1) = '';
          next;
        }
        last if length($in) < $nl + 1 + $len;
        start(substr($in, $nl + 1, $len));
        substr($in, 0, $nl + 1 + $len) = '';
      }
    }
  }
  if (@later) {
    my $now = time;
    push @sweep, map { $_->[1] } grep { $_->[0] <= $now } @later;
    @later = grep { $_->[0] > $now } @later;
  }
  # Steps that ended together (50 workers whose `sleep 1` ends at once) cost one pass over /proc, not one each.
  kill_by_cookies(@sweep) if @sweep;
  report_exit(@$_) for @reports;
  flush_out();
  reap_strays();
}
