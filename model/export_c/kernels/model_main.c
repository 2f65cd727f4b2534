/* A command-line driver for a model exported by `qforge export-c`: reads samples of
 * MODEL_INPUT_SIZE float32 values (native byte order) from standard input until it ends and,
 * for each, writes the MODEL_OUTPUT_SIZE outputs (MODEL_OUTPUT_T: int8, or int16 in native byte
 * order) to standard output, or with -a the index of the largest output as one text line (the
 * predicted class). */
#include <stdio.h>
#include <string.h>

#include "model.h"

int main(int argc, char **argv) {
  static float input[MODEL_INPUT_SIZE];
  static MODEL_OUTPUT_T output[MODEL_OUTPUT_SIZE];
  const int argmax = argc > 1 && strcmp(argv[1], "-a") == 0;
  while (fread(input, sizeof(float), MODEL_INPUT_SIZE, stdin) == MODEL_INPUT_SIZE) {
    model_run(input, output);
    if (argmax) {
      printf("%ld\n", (long)MODEL_ARGMAX(output, MODEL_OUTPUT_SIZE));
    } else if (fwrite(output, sizeof(MODEL_OUTPUT_T), MODEL_OUTPUT_SIZE, stdout) !=
               MODEL_OUTPUT_SIZE) {
      return 1;
    }
  }
  return 0;
}
