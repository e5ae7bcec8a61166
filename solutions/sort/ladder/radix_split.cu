// Lab sort, ladder rung: LSD radix sort by 1-bit stable splits on a scan, as lecture 8
// first has it. Each of the 32 passes splits the keys on one bit: the keys with a 0 keep
// their order and go first, the keys with a 1 keep their order and follow. Where each key
// goes is a scan: a 0 at position i goes to i - (ones before i), a 1 to (zeros in all) +
// (ones before i). Each pass counts the ones of every tile, scans the counts, and splits
// each tile in shared memory before writing it out: the same three steps as the solution,
// with a digit of one bit, so 32 passes instead of 8.
#define SORT_DIGIT_BITS 1
#include "../sort.cu"
