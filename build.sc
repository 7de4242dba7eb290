// SPDX-License-Identifier: Apache-2.0
// Mill 0.12 build of the cxltrack RTL generator (layout after rocket-chip's build.sc).
import mill._
import mill.scalalib._
import mill.scalalib.scalafmt._

object ivys {
  val scalaVersion = "2.13.16"
  val chiselVersion = "7.14.0"
  val chisel = mvn"org.chipsalliance::chisel:$chiselVersion"
  val chiselPlugin = mvn"org.chipsalliance:::chisel-plugin:$chiselVersion"
}

object rtl extends ScalaModule with ScalafmtModule {
  def sources = Task.Sources(moduleDir / "src")
  def scalaVersion = ivys.scalaVersion
  def ivyDeps = Agg(ivys.chisel)
  def scalacPluginIvyDeps = Agg(ivys.chiselPlugin)
  def scalacOptions = Seq("-deprecation", "-feature", "-language:reflectiveCalls", "-Ymacro-annotations")
  def mainClass = Some("cxltrack.Main")
}
