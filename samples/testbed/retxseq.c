/*
 * retxseq: report the sequence numbers of every TCP retransmission.
 *
 * The tcp:tcp_retransmit_skb tracepoint carries the skb address but no sequence number, this
 * kernel has no kprobe/eprobe events, and tcp_probe only fires on incoming segments. So this
 * helper attaches a tiny hand-assembled BPF program to the tracepoint. For each hit it reads
 * TCP_SKB_CB(skb)->seq and ->end_seq from the retransmitted skb (skb->cb is 40 bytes into
 * struct sk_buff on x86-64; struct tcp_skb_cb begins with __u32 seq, end_seq) and emits one
 * bpf_trace_printk() line "hscc_retx <sport<<48 | state<<32 | err as hex> <seq> <end_seq>".
 * run.py enables bpf_trace:bpf_trace_printk in its tracefs instance, so these lines carry the
 * same (mono) clock as tcp_probe. Every run checks that each retransmitted seq starts a data
 * segment in the sender-side capture (meta.json flows[].retrans_seq_matched).
 *
 * Build: gcc -O2 -Wall -o retxseq retxseq.c ; run as root; prints "ready", exits on SIGTERM.
 * Usage: retxseq <tracepoint id of tcp/tcp_retransmit_skb>
 */
#define _GNU_SOURCE
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define INSN(c, d, s, o, i) ((struct bpf_insn){.code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i)})
#define MOV64_REG(d, s) INSN(BPF_ALU64 | BPF_MOV | BPF_X, d, s, 0, 0)
#define MOV64_IMM(d, i) INSN(BPF_ALU64 | BPF_MOV | BPF_K, d, 0, 0, i)
#define ADD64_IMM(d, i) INSN(BPF_ALU64 | BPF_ADD | BPF_K, d, 0, 0, i)
#define LSH64_IMM(d, i) INSN(BPF_ALU64 | BPF_LSH | BPF_K, d, 0, 0, i)
#define OR64_REG(d, s) INSN(BPF_ALU64 | BPF_OR | BPF_X, d, s, 0, 0)
#define LDX(sz, d, s, o) INSN(BPF_LDX | BPF_MEM | (sz), d, s, o, 0)
#define ST_W(d, o, i) INSN(BPF_ST | BPF_MEM | BPF_W, d, 0, o, i)
#define CALL(f) INSN(BPF_JMP | BPF_CALL, 0, 0, 0, f)
#define EXIT() INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)

static volatile sig_atomic_t stop_flag;
static void on_sig(int s) { (void)s; stop_flag = 1; }

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: retxseq <tracepoint id>\n"); return 2; }
    /* format string "hscc_retx %llx %x %x" (20 chars + NUL, zero-padded to 24) at r10-48 */
    char fmt[24] = "hscc_retx %llx %x %x";
    int32_t w[6];
    memcpy(w, fmt, sizeof w);
    /* ctx = raw tracepoint record (events/tcp/tcp_retransmit_skb/format):
     * skbaddr @8 (u64), state @24 (int), sport @28 (u16), err @76 (int) */
    struct bpf_insn prog[] = {
        MOV64_REG(6, 1),                  /* r6 = ctx */
        LDX(BPF_DW, 3, 6, 8),             /* r3 = skbaddr */
        ADD64_IMM(3, 40),                 /* r3 = &skb->cb = &TCP_SKB_CB(skb)->seq */
        MOV64_REG(1, 10), ADD64_IMM(1, -8),
        MOV64_IMM(2, 8),
        CALL(BPF_FUNC_probe_read_kernel), /* *(r10-8) = {seq, end_seq} (zeroed on failure) */
        LDX(BPF_W, 7, 10, -8),            /* r7 = seq */
        LDX(BPF_W, 8, 10, -4),            /* r8 = end_seq */
        LDX(BPF_H, 9, 6, 28),             /* r9 = sport */
        LSH64_IMM(9, 48),
        LDX(BPF_W, 0, 6, 24),             /* state */
        LSH64_IMM(0, 32),
        OR64_REG(9, 0),
        LDX(BPF_W, 0, 6, 76),             /* err (32 bits, zero-extended) */
        OR64_REG(9, 0),
        ST_W(10, -48, w[0]), ST_W(10, -44, w[1]), ST_W(10, -40, w[2]),
        ST_W(10, -36, w[3]), ST_W(10, -32, w[4]), ST_W(10, -28, w[5]),
        MOV64_REG(1, 10), ADD64_IMM(1, -48),
        MOV64_IMM(2, 21),                 /* fmt size incl. NUL */
        MOV64_REG(3, 9), MOV64_REG(4, 7), MOV64_REG(5, 8),
        CALL(BPF_FUNC_trace_printk),
        MOV64_IMM(0, 0),
        EXIT(),
    };
    static char log[65536];
    union bpf_attr a;
    memset(&a, 0, sizeof a);
    a.prog_type = BPF_PROG_TYPE_TRACEPOINT;
    a.insns = (uint64_t)(uintptr_t)prog;
    a.insn_cnt = sizeof prog / sizeof prog[0];
    a.license = (uint64_t)(uintptr_t)"GPL";
    a.log_buf = (uint64_t)(uintptr_t)log;
    a.log_size = sizeof log;
    a.log_level = 1;
    int pfd = syscall(SYS_bpf, BPF_PROG_LOAD, &a, sizeof a);
    if (pfd < 0) { perror("BPF_PROG_LOAD"); fprintf(stderr, "%s\n", log); return 1; }
    struct perf_event_attr pa;
    memset(&pa, 0, sizeof pa);
    pa.type = PERF_TYPE_TRACEPOINT;
    pa.size = sizeof pa;
    pa.config = strtoull(argv[1], NULL, 10);
    pa.sample_period = 1;
    pa.wakeup_events = 1;
    int efd = syscall(SYS_perf_event_open, &pa, -1 /* any task */, 0 /* cpu 0 */, -1, PERF_FLAG_FD_CLOEXEC);
    if (efd < 0) { perror("perf_event_open"); return 1; }
    if (ioctl(efd, PERF_EVENT_IOC_SET_BPF, pfd) < 0) { perror("PERF_EVENT_IOC_SET_BPF"); return 1; }
    if (ioctl(efd, PERF_EVENT_IOC_ENABLE, 0) < 0) { perror("PERF_EVENT_IOC_ENABLE"); return 1; }
    signal(SIGTERM, on_sig);
    signal(SIGINT, on_sig);
    printf("ready\n");
    fflush(stdout);
    while (!stop_flag) pause();
    close(efd);
    close(pfd);
    return 0;
}
