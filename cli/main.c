/* kiln, the command: finds the subcommand in the table below and hands it the arguments.
 * Adding a subcommand is one row of `commands` plus its run function and help text.
 * Exit codes: 0 ok, 1 bad or unsupported model, 2 usage error (cli.h). */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static int help_run(int argc, char **argv);

static const char help_help[] = "usage: kiln help [COMMAND]\n"
                                "\n"
                                "Prints the list of commands, or the help of COMMAND.\n";

static const CliCommand commands[] = {
    {"inspect", cli_inspect_run, "show a model's inputs, outputs, ops, parameters and MACs",
     cli_inspect_help, NULL},
    {"compile", cli_compile_run, "compile a model into a standalone C bundle", cli_compile_help,
     cli_compile_help2},
    {"validate", cli_validate_run, "compare a compiled model with ONNX Runtime",
     cli_validate_help, NULL},
    {"calibrate", cli_calibrate_run, "measure activation ranges for kiln compile --int8",
     cli_calibrate_help, NULL},
    {"help", help_run, "show the help of kiln or of one command", help_help, NULL},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static const CliCommand *find_command(const char *name) {
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0) return &commands[i];
    return NULL;
}

static void print_main_help(FILE *out) {
    fprintf(out, "usage: kiln COMMAND [OPTIONS] ...\n"
                 "       kiln --version | --help\n"
                 "\n"
                 "Kiln compiles ONNX models ahead of time to C and CUDA source.\n"
                 "\n"
                 "commands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n"
                 "exit status: 0 ok, 1 bad or unsupported model, 2 usage error.\n"
                 "Run 'kiln help COMMAND' for the options of a command.\n");
}

static int help_run(int argc, char **argv) {
    if (argc == 1) {
        print_main_help(stdout);
        return CLI_EXIT_OK;
    }
    if (argc > 2) return cli_usage_error("help", "too many arguments");
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(help_help, stdout);
        return CLI_EXIT_OK;
    }
    const CliCommand *c = find_command(argv[1]);
    if (!c) return cli_usage_error("help", "unknown command '%s'", argv[1]);
    fputs(c->help, stdout);
    if (c->help2) fputs(c->help2, stdout);
    return CLI_EXIT_OK;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        print_main_help(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *arg = argv[1];
    if (strcmp(arg, "--version") == 0 || strcmp(arg, "-V") == 0) {
        printf("kiln %s\n", KILN_VERSION);
        return CLI_EXIT_OK;
    }
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
        print_main_help(stdout);
        return CLI_EXIT_OK;
    }
    if (arg[0] == '-') return cli_usage_error("kiln", "unknown option '%s'", arg);
    const CliCommand *c = find_command(arg);
    if (!c) return cli_usage_error("kiln", "unknown command '%s'", arg);
    return c->run(argc - 1, argv + 1);
}
