#include "lsp/private_dir.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ghostline::lsp {
namespace {

using ::testing::HasSubstr;
using ::testing::Optional;

// A fresh directory of this user (mode 0700) for each test, removed after it.
class PrivateDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "ghostline-private-dir-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  std::string path(const std::string& name) const { return root_ + "/" + name; }
  static mode_t mode_of(const std::string& p) {
    struct stat st;
    EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
    return st.st_mode & 07777;
  }
  static std::string content_of(const std::string& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  static void write_file(const std::string& p, const std::string& text, mode_t mode) {
    std::ofstream(p) << text;
    ASSERT_EQ(::chmod(p.c_str(), mode), 0);
  }
  static std::string error_of(const std::function<void()>& f) {
    try {
      f();
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "(nothing thrown)";
  }

  std::string root_;
};

TEST(PrivateDirFor, IsXdgRuntimeDirWhenSetElseADirectoryOfOurOwnInTmp) {
  const PrivateDir xdg = private_dir_for("/run/user/1000/", 1000);
  EXPECT_EQ(xdg.path, "/run/user/1000");
  EXPECT_EQ(xdg.access, DirAccess::NotWritableByOthers);
  EXPECT_FALSE(xdg.create_if_absent);
  for (const char* unset : {static_cast<const char*>(nullptr), ""}) {
    const PrivateDir tmp = private_dir_for(unset, 1000);
    EXPECT_EQ(tmp.path, "/tmp/ghostline-1000");
    EXPECT_EQ(tmp.access, DirAccess::OwnerOnly);
    EXPECT_TRUE(tmp.create_if_absent);
  }
}

TEST_F(PrivateDirTest, ADirectoryOfThisUserClosedToOthersIsFit) {
  EXPECT_EQ(private_dir_problem({root_, DirAccess::OwnerOnly, true}), std::nullopt);
  EXPECT_EQ(private_dir_problem({root_, DirAccess::NotWritableByOthers, false}), std::nullopt);
}

TEST_F(PrivateDirTest, OursMustBeExactly0700XdgOnlyClosedToWriters) {
  ASSERT_EQ(::chmod(root_.c_str(), 0755), 0);
  EXPECT_THAT(private_dir_problem({root_, DirAccess::OwnerOnly, true}),
              Optional(HasSubstr("it has mode 0755; it must be 0700")));
  EXPECT_EQ(private_dir_problem({root_, DirAccess::NotWritableByOthers, false}), std::nullopt);
  for (mode_t mode : {0770, 0707, 0777, 01777}) {
    ASSERT_EQ(::chmod(root_.c_str(), mode), 0);
    EXPECT_THAT(private_dir_problem({root_, DirAccess::NotWritableByOthers, false}),
                Optional(HasSubstr("group or others may write to it")))
        << std::oct << mode;
    EXPECT_THAT(private_dir_problem({root_, DirAccess::OwnerOnly, true}),
                Optional(HasSubstr("it must be 0700")));
  }
}

TEST_F(PrivateDirTest, ADirectoryOfAnotherUserIsUnfit) {
  const uid_t other = ::geteuid() + 1;
  EXPECT_THAT(private_dir_problem({root_, DirAccess::OwnerOnly, true}, other),
              Optional(HasSubstr("it belongs to " + describe_user(::geteuid()) +
                                 ", not to this user, " + describe_user(other))));
  EXPECT_THAT(private_dir_problem({root_, DirAccess::NotWritableByOthers, false}, other),
              Optional(HasSubstr("it belongs to")));
}

TEST_F(PrivateDirTest, ASymbolicLinkAFileOrNothingIsUnfit) {
  const std::string dir = path("real");
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  ASSERT_EQ(::symlink(dir.c_str(), path("link").c_str()), 0);
  EXPECT_THAT(private_dir_problem({path("link"), DirAccess::OwnerOnly, true}),
              Optional(HasSubstr("it is a symbolic link (to " + dir + ")")));
  write_file(path("file"), "", 0700);
  EXPECT_THAT(private_dir_problem({path("file"), DirAccess::OwnerOnly, true}),
              Optional(HasSubstr("not a directory")));
  EXPECT_THAT(private_dir_problem({path("none"), DirAccess::OwnerOnly, true}),
              Optional(HasSubstr("does not exist")));
}

TEST_F(PrivateDirTest, PrepareMakesOurDirectory0700WhateverTheUmask) {
  const mode_t mask = ::umask(0);
  prepare_private_dir({path("made"), DirAccess::OwnerOnly, true});
  ::umask(mask);
  EXPECT_EQ(mode_of(path("made")), 0700u);
  prepare_private_dir({path("made"), DirAccess::OwnerOnly, true});  // again: it is fit
}

TEST_F(PrivateDirTest, PrepareRefusesAnUnfitDirectoryNamingItAndTheProblem) {
  ASSERT_EQ(::mkdir(path("open").c_str(), 0700), 0);
  ASSERT_EQ(::chmod(path("open").c_str(), 0777), 0);
  const std::string error = error_of([&] {
    prepare_private_dir({path("open"), DirAccess::OwnerOnly, true});
  });
  EXPECT_THAT(error,
              HasSubstr("refusing to use the directory " + path("open") + ": it has mode 0777"));
  EXPECT_EQ(mode_of(path("open")), 0777u);  // reported, not repaired
  // XDG_RUNTIME_DIR is not ours to make.
  EXPECT_THAT(error_of([&] {
                prepare_private_dir({path("xdg"), DirAccess::NotWritableByOthers, false});
              }),
              HasSubstr(path("xdg") + ": it does not exist. XDG_RUNTIME_DIR must name"));
  EXPECT_FALSE(std::filesystem::exists(path("xdg")));
}

TEST_F(PrivateDirTest, ASocketPathMayHoldNothingOrASocketOfThisUser) {
  EXPECT_EQ(socket_path_problem(path("none.sock")), std::nullopt);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path("s.sock").c_str(), sizeof addr.sun_path - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  EXPECT_EQ(socket_path_problem(path("s.sock")), std::nullopt);
  EXPECT_THAT(socket_path_problem(path("s.sock"), ::geteuid() + 1),
              Optional(HasSubstr("it belongs to")));
  ::close(fd);
  // A link is refused even when it leads to a socket of ours: it is never followed.
  ASSERT_EQ(::symlink(path("s.sock").c_str(), path("link.sock").c_str()), 0);
  EXPECT_THAT(socket_path_problem(path("link.sock")), Optional(HasSubstr("it is a symbolic link")));
  write_file(path("file.sock"), "", 0600);
  EXPECT_THAT(socket_path_problem(path("file.sock")),
              Optional(HasSubstr("it exists and is not a socket")));
}

TEST_F(PrivateDirTest, ALogFileIsMade0600AndNeverOpenedThroughALink) {
  const mode_t mask = ::umask(0);
  {
    auto fd = open_log_file(path("d.log"));
    ASSERT_GE(fd.get(), 0);
  }
  ::umask(mask);
  EXPECT_EQ(mode_of(path("d.log")), 0600u);
  {
    auto fd = open_log_file(path("d.log"));  // appends to an existing file of ours
    ASSERT_EQ(::write(fd.get(), "x\n", 2), 2);
  }
  EXPECT_EQ(content_of(path("d.log")), "x\n");

  write_file(path("target"), "untouched", 0644);
  ASSERT_EQ(::symlink(path("target").c_str(), path("link.log").c_str()), 0);
  EXPECT_THAT(
      error_of([&] { open_log_file(path("link.log")); }),
      HasSubstr("refusing to open the log file " + path("link.log") + ": it is a symbolic link"));
  ASSERT_EQ(::symlink(path("absent").c_str(), path("dangling.log").c_str()), 0);
  EXPECT_THAT(error_of([&] { open_log_file(path("dangling.log")); }),
              HasSubstr("it is a symbolic link"));
  EXPECT_EQ(content_of(path("target")), "untouched");
  EXPECT_FALSE(std::filesystem::exists(path("absent")));

  // A FIFO would block the daemon (and feed a reader): refused at once.
  ASSERT_EQ(::mkfifo(path("fifo.log").c_str(), 0600), 0);
  EXPECT_THAT(error_of([&] { open_log_file(path("fifo.log")); }),
              HasSubstr("it is not a regular file"));
  EXPECT_GE(open_log_file("/dev/null").get(), 0);
}

TEST_F(PrivateDirTest, ASecretFileIsWritten0600ReplacingOnlyAStaleOneOfOurs) {
  const mode_t mask = ::umask(0);
  write_secret_file(path("t.token"), "first");
  ::umask(mask);
  EXPECT_EQ(mode_of(path("t.token")), 0600u);
  EXPECT_EQ(content_of(path("t.token")), "first\n");
  write_secret_file(path("t.token"), "second");  // a daemon that died left it
  EXPECT_THAT(read_secret_file(path("t.token")), Optional(std::string("second")));

  write_file(path("target"), "untouched", 0644);
  ASSERT_EQ(::symlink(path("target").c_str(), path("link.token").c_str()), 0);
  EXPECT_THAT(error_of([&] { write_secret_file(path("link.token"), "s"); }),
              HasSubstr("refusing to replace " + path("link.token") + ": it is a symbolic link"));
  EXPECT_THAT(error_of([&] { read_secret_file(path("link.token")); }),
              HasSubstr("refusing to read " + path("link.token") + ": it is a symbolic link"));
  EXPECT_EQ(content_of(path("target")), "untouched");
  ASSERT_EQ(::mkdir(path("dir.token").c_str(), 0700), 0);
  EXPECT_THAT(error_of([&] { write_secret_file(path("dir.token"), "s"); }),
              HasSubstr("it is not a regular file"));
}

TEST_F(PrivateDirTest, ASecretFileOthersMayReadIsRefused) {
  EXPECT_EQ(read_secret_file(path("none.token")), std::nullopt);
  write_file(path("open.token"), "  abc\n", 0644);
  EXPECT_THAT(error_of([&] { read_secret_file(path("open.token")); }),
              HasSubstr("refusing to read " + path("open.token") + ": it has mode 0644"));
  ASSERT_EQ(::chmod(path("open.token").c_str(), 0600), 0);
  EXPECT_THAT(read_secret_file(path("open.token")), Optional(std::string("abc")));
}

TEST(PeerUid, IsThisUserAtTheOtherEndOfOurOwnSocket) {
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  EXPECT_THAT(peer_uid(fds[0]), Optional(::geteuid()));
  ::close(fds[0]);
  ::close(fds[1]);
  const int not_a_socket = ::open("/dev/null", O_RDONLY);
  EXPECT_EQ(peer_uid(not_a_socket), std::nullopt);
  ::close(not_a_socket);
}

TEST(DescribeUser, NamesTheUserAndTheId) {
  EXPECT_EQ(describe_user(0), "root (uid 0)");
  EXPECT_EQ(describe_user(4000000000u), "uid 4000000000");
}

}  // namespace
}  // namespace ghostline::lsp
