/** The command-line entry point of {@code java -jar herald-load.jar}: hands the arguments to herald.load.main. */
package herald.load.cli;
